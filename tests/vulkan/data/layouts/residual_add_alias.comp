// residual_add with an optional operand absent: the engine binds a's buffer again at binding 2
// (the manifest declares {"binding": 2, "same_as": 0}) and the kernel reads a through it.
// WRITABLE_ALIAS declares binding 2 without readonly (refused for an alias of an "in" buffer).
// READ_NEXT (a planted bug) reads the alias one element ahead.
// Shape contract: a, b, y [n] f32.
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer B { float b[]; };
#ifdef WRITABLE_ALIAS
layout(set = 0, binding = 2) buffer A2 { float a2[]; };
#else
layout(set = 0, binding = 2) readonly buffer A2 { float a2[]; };
#endif
layout(set = 0, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { uint n; } pc;
void main() {
  const uint i = gl_GlobalInvocationID.x;
  if (i >= pc.n) return;
#ifdef READ_NEXT
  y[i] = a2[min(i + 1u, pc.n - 1u)] + b[i];
#else
  y[i] = a2[i] + b[i];
#endif
}
