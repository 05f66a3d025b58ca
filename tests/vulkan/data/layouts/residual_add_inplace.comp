// residual_add in place: a += b, the result left in a's buffer (the manifest binds a with
// "becomes": "y"). SKIP_LAST drops the last element (a planted bug: y keeps a's input there).
// Shape contract: a, b [n] f32; n from the push constant.
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer B { float b[]; };
layout(push_constant) uniform P { uint n; } pc;
void main() {
  uint i = gl_GlobalInvocationID.x;
#ifdef SKIP_LAST
  if (i + 1 >= pc.n) return;
#else
  if (i >= pc.n) return;
#endif
  a[i] = a[i] + b[i];
}
