// residual_add in workgroups of 1024 invocations: correct, but more subgroups per workgroup than a
// device may allow at a pinned subgroup size (maxComputeWorkgroupSubgroups; lavapipe: 32, so 1024
// invocations need subgroups of 32 or more). Such a plan cannot run: its cases fail with that
// reason before anything is submitted, and the device is fine.
// Shape contract: a, b, y [n] f32.
#version 450
layout(local_size_x = 1024) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer B { float b[]; };
layout(set = 0, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { uint n; } pc;
void main() {
  const uint i = gl_GlobalInvocationID.x;
  if (i < pc.n) y[i] = a[i] + b[i];
}
