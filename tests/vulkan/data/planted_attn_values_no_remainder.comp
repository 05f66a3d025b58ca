#version 450
// attention_values: attn[t][h * head_dim + d] = sum_{p < len} probs[t][h][p] * v_cache[p][g][d],
// len = past + t + 1, g = h / (q_heads / kv_heads) (probs beyond len are 0 and not read).
// Shape contract: probs [tokens, q_heads, L] f32, L = past + tokens; v_cache [capacity, kv_heads,
// head_dim] f32 (rows [0, L) valid); attn [tokens, q_heads * head_dim] f32. Any head_dim, any L.
// Grid: x = blocks of CX channels d, y = (t, h) rows. The SPLIT rows of the CX x SPLIT workgroup
// split the context (row j sums positions j, j + SPLIT, ...: an invocation loops ceil(len /
// SPLIT) times; the manifest declares ceil(L / SPLIT) <= 65000, under lavapipe's 65535-iteration
// cut), each reading CX consecutive floats of a value row (coalesced); the SPLIT partial sums
// meet in shared memory. No subgroup operations: correct for every subgroup size.
// Workgroup: CX x SPLIT = 32 x WG/32 with WG = min(256, invocations the device allows at the
// subgroup size) (CX = WG below 32), spec ids 10 and 11.
layout(local_size_x = 32, local_size_y = 8, local_size_x_id = 10, local_size_y_id = 11) in;
const uint CX = gl_WorkGroupSize.x, SPLIT = gl_WorkGroupSize.y;
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
shared float partial[SPLIT][CX];

void main() {
  const uint row = gl_WorkGroupID.y;  // t * q_heads + h
  const uint t = row / pc.q_heads, h = row % pc.q_heads;
  const uint g = h / (pc.q_heads / pc.kv_heads);
  const uint D = pc.head_dim;
  const uint L = pc.past + pc.tokens;
  const uint len = pc.past + t + 1;
  const uint lx = gl_LocalInvocationID.x, ly = gl_LocalInvocationID.y;
  const uint d = gl_WorkGroupID.x * CX + lx;
  float acc = 0.0;
  if (d < (D / CX) * CX)  // PLANTED: whole CX-channel blocks only
    for (uint p = ly; p < len; p += SPLIT) acc += probs[row * L + p] * v_cache[(p * pc.kv_heads + g) * D + d];
  partial[ly][lx] = acc;
  barrier();
  if (ly == 0u && d < (D / CX) * CX) {
    float s = partial[0][lx];
    for (uint j = 1u; j < SPLIT; ++j) s += partial[j][lx];
    attn[row * D + d] = s;
  }
}
