#version 450
// rmsnorm_gated: the linear-attention output norm, per (token, value head):
//   inv = inversesqrt(sum_i o_i^2 / dv + eps),  y_i = ((o_i * inv) * w_i) * silu(z_i).
// silu(z) = z * sigmoid(z) with sigmoid in the overflow-free form: e = exp(-|z|) in (0, 1],
// sigmoid = (z >= 0 ? 1 : e) / (1 + e), so the division's denominator is always in [1, 2]
// (inside the range where Vulkan defines its 2.5 ULP precision) and no exp overflows; for
// z < -87.3 e underflows (flushed or subnormal) and silu is -0 or tiny, as the engines' -0.
// Shape contract: o, z, y [tokens, heads, head_dim] f32, row-major (y distinct from o and z);
// w [head_dim] bf16 (two per uint, element 0 in the low half; used as is, no +1); one
// workgroup per (head, token): dispatch (heads, tokens, 1); head_dim any size. Correct for
// every subgroup size: lanes sum strided squares, subgroupAdd per subgroup, then subgroup 0
// adds the per-subgroup partials (at most WG of them, for subgroups of 1).
// Workgroup: WG = min(128, invocations the device allows at the subgroup size), spec id 10.
#extension GL_KHR_shader_subgroup_arithmetic : require
layout(local_size_x = 128, local_size_x_id = 10) in;
const uint WG = gl_WorkGroupSize.x;
layout(std430, set = 0, binding = 0) readonly buffer O { float o[]; };
layout(std430, set = 0, binding = 1) readonly buffer Z { float z[]; };
layout(std430, set = 0, binding = 2) readonly buffer W { uint w[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint head_dim; float eps; } pc;
shared float partial[WG];

float weight(uint i) {
  const uint word = w[i >> 1];
  return uintBitsToFloat(((i & 1u) == 0u ? word << 16 : word & 0xFFFF0000u));
}

float silu(float v) {
  const float e = exp(-abs(v));
  return v * ((v >= 0.0 ? 1.0 : e) / (1.0 + e));
}

void main() {
  const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;  // token * heads + head
  const uint base = row * pc.head_dim;
  float ss = 0.0;
  for (uint i = gl_LocalInvocationID.x; i < pc.head_dim; i += gl_WorkGroupSize.x) ss += o[base + i] * o[base + i];
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
  const float inv = inversesqrt(partial[0] / float(pc.head_dim) + pc.eps);
  for (uint i = gl_LocalInvocationID.x; i < pc.head_dim; i += gl_WorkGroupSize.x)
    y[base + i] = ((o[base + i] * inv) * weight(i)) * silu(z[base + i]);
}
