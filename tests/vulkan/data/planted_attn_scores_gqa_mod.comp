#version 450
// attention_scores: scores[t][h][p] = dot(q[t][h], k_cache[p][g]) * scale for p < past + t + 1
// (causal: token t sees itself), -inf for past + t + 1 <= p < past + tokens (written, so the
// softmax stage and any reader can tell a masked position from an unwritten one).
// g = h / (q_heads / kv_heads): consecutive query heads share a kv head (GQA).
// Shape contract: q [tokens, q_heads, head_dim] f32; k_cache [capacity, kv_heads, head_dim] f32
// (rows [0, past + tokens) valid: kv_append ran first); scores [tokens, q_heads, L] f32 with
// row length L = past + tokens (a buffer may be larger: only the first tokens*q_heads*L words
// are written). scale is the f32 value the kernel multiplies by (1/sqrt(head_dim) for the
// models). q_heads % kv_heads == 0; any head_dim, any L.
// Grid: x = blocks of 64 positions, y = (t, h) rows. Each subgroup takes one position at a time
// (positions strided over the workgroup's subgroups); its lanes read the key row's head_dim
// floats consecutively (coalesced), fma their partial dots and subgroupAdd them. Correct for
// every subgroup and workgroup size; an invocation loops ceil(64/num_subgroups) *
// ceil(head_dim/subgroup) times, about 64 head_dim / WG (head_dim/2 at WG 128): far below
// lavapipe's 65535 cut.
// Workgroup: WG = min(256, invocations the device allows at the subgroup size), spec id 10.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
layout(local_size_x = 256, local_size_x_id = 10) in;
layout(std430, set = 0, binding = 0) readonly buffer Q { float q[]; };
layout(std430, set = 0, binding = 1) readonly buffer KC { float k_cache[]; };
layout(std430, set = 0, binding = 2) writeonly buffer S { float scores[]; };
layout(push_constant) uniform Push {
  uint tokens;
  uint q_heads;
  uint kv_heads;
  uint head_dim;
  uint past;
  float scale;
} pc;

const uint kBlock = 64;  // positions per workgroup

void main() {
  const uint row = gl_WorkGroupID.y;  // t * q_heads + h
  const uint t = row / pc.q_heads, h = row % pc.q_heads;
  const uint g = h % pc.kv_heads;  // PLANTED: interleaved GQA mapping
  const uint D = pc.head_dim;
  const uint L = pc.past + pc.tokens;
  const uint len = pc.past + t + 1;  // positions this token sees
  const uint p0 = gl_WorkGroupID.x * kBlock;
  const uint p_end = min(p0 + kBlock, L);
  const uint qb = row * D;
  // p is uniform over a subgroup, so subgroupAdd sees every lane of it.
  for (uint p = p0 + gl_SubgroupID; p < p_end; p += gl_NumSubgroups) {
    float s = uintBitsToFloat(0xFF800000u);  // -inf: masked
    if (p < len) {
      const uint kb = (p * pc.kv_heads + g) * D;
      float acc = 0.0;
      for (uint d = gl_SubgroupInvocationID; d < D; d += gl_SubgroupSize) acc = fma(q[qb + d], k_cache[kb + d], acc);
      s = subgroupAdd(acc) * pc.scale;
    }
    if (subgroupElect()) scores[row * L + p] = s;
  }
}
