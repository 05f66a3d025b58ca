#version 450
// delta_net: the gated delta rule over T tokens, state updated in place. Per token t, v-head h
// (k-head kh = h / (v_heads / k_heads)) and state row vi (S_h[vi][0..dk), k-index contiguous):
//   s = g S[vi];  kv = s . k;  delta = (v[vi] - kv) beta;  S[vi] = s + k delta;  o[vi] = S[vi] . q
// Shape contract: q, k [tokens, k_heads, key_dim] f32; v, o [tokens, v_heads, value_dim] f32;
// g, beta [tokens, v_heads] f32; state [v_heads, value_dim, key_dim] f32 in/out (MLX layout).
// Workgroup (h, slice of ROWS rows): dispatch (v_heads, ceil_div(value_dim, ROWS), 1). Rows
// are independent, so a subgroup owns whole rows (r = subgroup id, += number of subgroups):
// its lanes stride over the row's k-index (coalesced), both dots are subgroupAdd, and every
// state element is read and written by one lane only (in place, race-free, no barriers; also
// across the tokens of a prefill call). The second pass re-reads the row from cache rather than
// keeping it in registers, so key_dim is not limited. Any subgroup size (gl_SubgroupSize,
// gl_NumSubgroups) and any workgroup size.
// Order: s = g * S (rounded), kv = fma(s, k, kv) per lane then subgroupAdd, S1 = fma(k, delta, s),
// o = fma(S1, q, o) per lane then subgroupAdd.
// Workgroup: WG = min(128, invocations the device allows at the subgroup size), spec id 10.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
layout(local_size_x = 128, local_size_x_id = 10) in;
layout(std430, set = 0, binding = 0) readonly buffer Q { float q[]; };
layout(std430, set = 0, binding = 1) readonly buffer K { float k[]; };
layout(std430, set = 0, binding = 2) readonly buffer V { float v[]; };
layout(std430, set = 0, binding = 3) readonly buffer G { float g[]; };
layout(std430, set = 0, binding = 4) readonly buffer Beta { float beta[]; };
layout(std430, set = 0, binding = 5) buffer S { float state[]; };
layout(std430, set = 0, binding = 6) writeonly buffer O { float o[]; };
layout(push_constant) uniform Push { uint tokens; uint k_heads; uint v_heads; uint key_dim; uint value_dim; } pc;
const uint ROWS = 16u;

void main() {
  const uint h = gl_WorkGroupID.x;
  const uint row0 = gl_WorkGroupID.y * ROWS;
  const uint rows = min(ROWS, pc.value_dim - row0);
  const uint kh = h / (pc.v_heads / pc.k_heads);
  const uint dk = pc.key_dim, dv = pc.value_dim;
  const uint lane = gl_SubgroupInvocationID, width = gl_SubgroupSize;
  for (uint t = 0u; t < pc.tokens; ++t) {
    const uint qk = (t * pc.k_heads + kh) * dk;
    const uint hv = t * pc.v_heads + h;
    const float gh = g[hv], bh = beta[hv];
    for (uint r = gl_SubgroupID; r < rows; r += gl_NumSubgroups) {
      const uint vi = row0 + r;
      const uint base = (h * dv + vi) * dk;
      float kv = 0.0;
      for (uint i = lane; i < dk; i += width) kv = fma(gh * state[base + i], k[qk + i], kv);
      kv = subgroupAdd(kv);
      const float delta = (v[hv * dv + vi] - kv) * bh;
      float acc = 0.0;
      for (uint i = lane; i < dk; i += width) {
        const float s1 = fma(k[qk + i], delta, gh * state[base + i]);
        state[base + i] = s1;
        acc = fma(s1, q[qk + i], acc);
      }
      acc = subgroupAdd(acc);
      if (subgroupElect()) o[hv * dv + vi] = acc;
    }
  }
}
