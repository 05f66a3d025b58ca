#version 450
// qk_norm: unweighted per-head RMSNorm of the linear-attention q and k with their scales folded in:
//   inv = inversesqrt(sum_i x_i^2 / dk + eps) per head vector x (q and k separately),
//   q_out = (q * inv) * (s * s),  k_out = (k * inv) * s,  s = inversesqrt(dk)   (1/dk, 1/sqrt(dk)).
// Shape contract: q, k, q_out, k_out [tokens, heads, head_dim] f32, row-major (q_out and k_out
// distinct from q and k: the harness binds four buffers); one workgroup per (head, token):
// dispatch (heads, tokens, 1); head_dim any size (lanes stride over it). Correct for every
// subgroup size: lanes sum strided squares of q and k (a vec2), subgroupAdd per subgroup, then
// subgroup 0 adds the per-subgroup partials (at most WG of them, for subgroups of 1).
// Workgroup: WG = min(128, invocations the device allows at the subgroup size), spec id 10.
#extension GL_KHR_shader_subgroup_arithmetic : require
layout(local_size_x = 128, local_size_x_id = 10) in;
const uint WG = gl_WorkGroupSize.x;
layout(std430, set = 0, binding = 0) readonly buffer Q { float q[]; };
layout(std430, set = 0, binding = 1) readonly buffer K { float k[]; };
layout(std430, set = 0, binding = 2) writeonly buffer QO { float q_out[]; };
layout(std430, set = 0, binding = 3) writeonly buffer KO { float k_out[]; };
layout(push_constant) uniform Push { uint head_dim; float eps; } pc;
shared vec2 partial[WG];

void main() {
  const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;  // token * heads + head
  const uint base = row * pc.head_dim;
  vec2 ss = vec2(0.0);
  for (uint i = gl_LocalInvocationID.x; i < pc.head_dim; i += gl_WorkGroupSize.x) {
    const vec2 v = vec2(q[base + i], k[base + i]);
    ss += v * v;
  }
  ss = subgroupAdd(ss);
  if (subgroupElect()) partial[gl_SubgroupID] = ss;
  barrier();
  if (gl_SubgroupID == 0) {
    vec2 t = vec2(0.0);
    for (uint s = gl_SubgroupInvocationID; s < gl_NumSubgroups; s += gl_SubgroupSize) t += partial[s];
    t = subgroupAdd(t);
    if (subgroupElect()) partial[0] = t;
  }
  barrier();
  const float dk = float(pc.head_dim);
  const vec2 inv = inversesqrt(partial[0] / dk + pc.eps);
  const float s = inversesqrt(dk);
  const float q_scale = s * s;
  for (uint i = gl_LocalInvocationID.x; i < pc.head_dim; i += gl_WorkGroupSize.x) {
    q_out[base + i] = (q[base + i] * inv.x) * q_scale;
    k_out[base + i] = (k[base + i] * inv.y) * s;
  }
}
