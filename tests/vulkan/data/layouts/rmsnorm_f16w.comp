// rmsnorm with the weight in f16 (W_F16) or f32 (default): the op's bf16 w converted exactly by
// the manifest's binding type. One workgroup per row, 64 invocations.
// Shape contract: x [rows][dim] f32, w [dim], y [rows][dim] f32.
#version 450
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
#ifdef W_F16
layout(set = 0, binding = 1) readonly buffer W { float16_t w[]; };
#else
layout(set = 0, binding = 1) readonly buffer W { float w[]; };
#endif
layout(set = 0, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { uint dim; float eps; uint add_one; } pc;
shared float part[64];
void main() {
  const uint row = gl_WorkGroupID.x, t = gl_LocalInvocationID.x, base = row * pc.dim;
  float acc = 0.0;
  for (uint i = t; i < pc.dim; i += 64u) acc = fma(x[base + i], x[base + i], acc);
  part[t] = acc;
  barrier();
  for (uint s = 32u; s > 0u; s >>= 1) {
    if (t < s) part[t] += part[t + s];
    barrier();
  }
  const float inv = inversesqrt(part[0] / float(pc.dim) + pc.eps);
  for (uint i = t; i < pc.dim; i += 64u) {
    const float wi = pc.add_one != 0u ? 1.0 + float(w[i]) : float(w[i]);
    y[base + i] = x[base + i] * inv * wi;
  }
}
