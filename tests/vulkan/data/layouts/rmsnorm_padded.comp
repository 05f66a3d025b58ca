// rmsnorm over rows held at a padded row stride (x and y rows every `stride` floats), the sum of
// squares passed through a scratch buffer. One workgroup per row, 64 invocations.
// WRITE_PAD (a planted bug): also zeroes the first padding element after each row of y.
// Shape contract: x [rows][stride] (dim used), w [dim] bf16 pairs, y [rows][stride], ss [rows].
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) readonly buffer W { uint w[]; };
layout(set = 0, binding = 2) writeonly buffer Y { float y[]; };
layout(set = 0, binding = 3) buffer S { float ss[]; };
layout(push_constant) uniform P { uint dim; uint stride; float eps; uint add_one; } pc;
shared float part[64];
float weight(uint i) {
  uint word = w[i / 2u];
  return uintBitsToFloat(((i % 2u) == 0u ? word << 16 : word & 0xffff0000u));
}
void main() {
  uint row = gl_WorkGroupID.x, t = gl_LocalInvocationID.x;
  uint base = row * pc.stride;
  float acc = 0.0;
  for (uint i = t; i < pc.dim; i += 64u) acc = fma(x[base + i], x[base + i], acc);
  part[t] = acc;
  barrier();
  for (uint s = 32u; s > 0u; s >>= 1) {
    if (t < s) part[t] += part[t + s];
    barrier();
  }
  if (t == 0u) ss[row] = part[0];
  memoryBarrierBuffer();
  barrier();
  float inv = inversesqrt(ss[row] / float(pc.dim) + pc.eps);
  for (uint i = t; i < pc.dim; i += 64u) {
    float wi = pc.add_one != 0u ? 1.0 + weight(i) : weight(i);
    y[base + i] = x[base + i] * inv * wi;
  }
#ifdef WRITE_PAD
  if (t == 0u && pc.stride > pc.dim) y[base + pc.dim] = 0.0;
#endif
}
