#version 450
// residual_add: y[i] = a[i] + b[i]. Shape contract: a, b, y [n] f32; y may be a or b.
// One invocation per element, dispatch ceil_div(n, WG).
// Workgroup: WG = min(256, invocations the device allows at the subgroup size), spec id 10.
layout(local_size_x = 256, local_size_x_id = 10) in;
layout(std430, set = 0, binding = 0) readonly buffer A { float a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { float b[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint n; } pc;

void main() {
  const uint i = gl_GlobalInvocationID.x;
  if (i + 1u < pc.n) y[i] = a[i] + b[i];  // PLANTED BUG: last element never written
}
