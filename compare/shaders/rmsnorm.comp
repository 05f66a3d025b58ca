#version 450
// rmsnorm: y[r][i] = x[r][i] * inversesqrt(mean_i(x[r][i]^2) + eps) * w'[i], w' = w or 1 + w.
// Shape contract: x [rows, dim] f32, w [dim] bf16 (two per uint, element 0 in the low half),
// y [rows, dim] f32; one workgroup per row; dim any size. Correct for every subgroup size:
// lanes sum strided squares, subgroupAdd per subgroup, then subgroup 0 adds the per-subgroup
// partials (at most WG of them, for subgroups of 1).
// Workgroup: WG = min(256, invocations the device allows at the subgroup size), spec id 10.
#extension GL_KHR_shader_subgroup_arithmetic : require
layout(local_size_x = 256, local_size_x_id = 10) in;
const uint WG = gl_WorkGroupSize.x;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer W { uint w[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint dim; float eps; uint add_one; } pc;
shared float partial[WG];

float weight(uint i) {
  const uint word = w[i >> 1];
  return uintBitsToFloat(((i & 1u) == 0u ? word << 16 : word & 0xFFFF0000u));
}

void main() {
  const uint row = gl_WorkGroupID.x;
  const uint base = row * pc.dim;
  float ss = 0.0;
  for (uint i = gl_LocalInvocationID.x; i < pc.dim; i += gl_WorkGroupSize.x) ss += x[base + i] * x[base + i];
  ss = subgroupAdd(ss);
  if (subgroupElect()) partial[gl_SubgroupID] = ss;
  barrier();
  if (gl_SubgroupID == 0) {
    float t = 0.0;
    for (uint s = gl_SubgroupInvocationID; s < gl_NumSubgroups; s += gl_SubgroupSize) t += partial[s];
    t = subgroupAdd(t);
    if (subgroupElect()) partial[0] = t;
  }
  barrier();
  const float inv = inversesqrt(partial[0] / float(pc.dim) + pc.eps);
  for (uint i = gl_LocalInvocationID.x; i < pc.dim; i += gl_WorkGroupSize.x) {
    const float wi = pc.add_one != 0u ? 1.0 + weight(i) : weight(i);
    y[base + i] = (x[base + i] * inv) * wi;
  }
}
