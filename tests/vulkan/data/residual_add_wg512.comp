#version 450
// residual_add: y[i] = a[i] + b[i]. Shape contract: a, b, y [n] f32; y may be a or b.
// A fixed 512-invocation workgroup, as engines write them: more than 32 subgroups of 8 (lavapipe's
// maxComputeWorkgroupSubgroups x its size), so it runs only where the driver picks the size
// (docs/manifests.md "Subgroup size").
layout(local_size_x = 512) in;
layout(std430, set = 0, binding = 0) readonly buffer A { float a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { float b[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint n; } pc;

void main() {
  const uint i = gl_GlobalInvocationID.x;
  if (i < pc.n) y[i] = a[i] + b[i];
}
