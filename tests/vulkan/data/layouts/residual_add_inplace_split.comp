// residual_add in place as flash-moe-vulkan's host calls it: b is read through a readonly binding
// and the sum written through a writeonly binding of the same buffer ({"binding": 2, "same_as": 1},
// b "inout" becoming y). READONLY_OUT declares binding 2 readonly too: nothing could write the
// buffer, refused at load. Shape contract: a, b [n] f32; y = a + b overwrites b.
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer B { float b[]; };
#ifdef READONLY_OUT
layout(set = 0, binding = 2) readonly buffer Y { float y[]; };
#else
layout(set = 0, binding = 2) writeonly buffer Y { float y[]; };
#endif
layout(push_constant) uniform P { uint n; } pc;
void main() {
  const uint i = gl_GlobalInvocationID.x;
  if (i >= pc.n) return;
#ifdef READONLY_OUT
  if (y[i] == -1.0) return;  // reads binding 2, so the refusal is about access, not an unused binding
#else
  y[i] = a[i] + b[i];
#endif
}
