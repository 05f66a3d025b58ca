#version 450
// attention_values: attn[t][h * head_dim + d] = sum_{p < len} probs[t][h][p] * v_cache[p][g][d],
// len = past + t + 1, g = h / (q_heads / kv_heads) (probs beyond len are 0 and not read).
// Shape contract: probs [tokens, q_heads, L] f32, L = past + tokens; v_cache [capacity, kv_heads,
// head_dim] f32 (rows [0, L) valid); attn [tokens, q_heads * head_dim] f32. Any head_dim, any L.
// Grid: x = blocks of 32 channels d, y = (t, h) rows. The 8 rows of the 32 x 8 workgroup split
// the context (row j sums positions j, j + 8, ...: an invocation loops ceil(len / 8) times, so
// contexts up to ~500k stay under lavapipe's 65535-iteration cut), each reading 32 consecutive
// floats of a value row (coalesced); the 8 partial sums meet in shared memory. No subgroup
// operations: correct for every subgroup size.
layout(local_size_x = 32, local_size_y = 8) in;
layout(std430, set = 0, binding = 0) readonly buffer P { float probs[]; };
layout(std430, set = 0, binding = 1) readonly buffer VC { float v_cache[]; };
layout(std430, set = 0, binding = 2) writeonly buffer A { float attn[]; };
layout(push_constant) uniform Push {
  uint tokens;
  uint q_heads;
  uint kv_heads;
  uint head_dim;
  uint past;
} pc;
shared float partial[8][32];

void main() {
  const uint row = gl_WorkGroupID.y;  // t * q_heads + h
  const uint t = row / pc.q_heads, h = row % pc.q_heads;
  const uint g = h / (pc.q_heads / pc.kv_heads);
  const uint D = pc.head_dim;
  const uint L = pc.past + pc.tokens;
  const uint len = pc.past + t + 1;
  const uint lx = gl_LocalInvocationID.x, ly = gl_LocalInvocationID.y;
  const uint d = gl_WorkGroupID.x * 32u + lx;
  float acc = 0.0;
  if (d < D)
    for (uint p = ly; p < len; p += 8u) acc += probs[row * L + p] * v_cache[(p * pc.kv_heads + g) * D + d];
  partial[ly][lx] = acc;
  barrier();
  if (ly == 0u && d < D) {
    float s = partial[0][lx];
    for (uint j = 1u; j < 8u; ++j) s += partial[j][lx];
    attn[row * D + d] = s;
  }
}
