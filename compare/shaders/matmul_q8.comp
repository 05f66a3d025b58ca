#version 450
// matmul_q (8-bit, MLX affine): Y[t][r] = sum_c (q[r][c] * s[r][c/G] + b[r][c/G]) * X[t][c].
// Shape contract: w [rows, cols/4] uint (4 codes per word, byte n at bits 8n..8n+7), scales and
// biases [rows, cols/G] bf16 (two per uint, element 0 in the low half), X [tokens, cols] f32
// row-major, Y [tokens, rows] f32 row-major; G = group_size a multiple of 4 dividing cols (64 in
// every checkpoint: A3B mlp.gate [256, 2048], shared_expert_gate [1, 2048]), tokens >= 1.
// The scheme of matmul_q4.comp: grid x = ceil_div(rows, ROWS_PER_WG) (subgroups take rows in
// turn, lanes stride over words), y = ceil_div(tokens, TILE_T); a dequantised word serves the
// workgroup's TILE_T = min(8, tokens) tokens; subgroupAdd per token. Each term is
// fma(q, s, b) * x, the reference's term.
// Workgroup: WG = min(128, invocations the device allows at the subgroup size), spec id 10.
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x = 128, local_size_x_id = 10) in;
layout(constant_id = 0) const uint ROWS_PER_WG = 4;
layout(constant_id = 1) const uint TILE_T = 8;
layout(std430, set = 0, binding = 0) readonly buffer Wq { uint wq[]; };
layout(std430, set = 0, binding = 1) readonly buffer S { uint scales[]; };
layout(std430, set = 0, binding = 2) readonly buffer Bi { uint biases[]; };
layout(std430, set = 0, binding = 3) readonly buffer X { vec4 x4[]; };  // cols % 4 == 0: one vec4 per word
layout(std430, set = 0, binding = 4) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint rows; uint cols; uint tokens; uint group_size; } pc;

float bf16_at(uint word, uint i) { return uintBitsToFloat((i & 1u) == 0u ? word << 16 : word & 0xFFFF0000u); }

void main() {
  const uint words = pc.cols / 4u, groups = pc.cols / pc.group_size, words_per_group = pc.group_size / 4u;
  const uint t0 = gl_WorkGroupID.y * TILE_T;
  const uint nt = min(TILE_T, pc.tokens - t0);  // the last tile may be partial
  for (uint k = gl_SubgroupID; k < ROWS_PER_WG; k += gl_NumSubgroups) {
    const uint row = gl_WorkGroupID.x * ROWS_PER_WG + k;
    if (row >= pc.rows) break;  // uniform within the subgroup
    float acc[TILE_T];
    [[unroll]] for (uint t = 0u; t < TILE_T; ++t) acc[t] = 0.0;
    for (uint j = gl_SubgroupInvocationID; j < words; j += gl_SubgroupSize) {
      const uint g = row * groups + j / words_per_group;
      const float s = bf16_at(scales[g >> 1], g), b = bf16_at(biases[g >> 1], g);
      const uint word = wq[row * words + j];
      const vec4 w = vec4(fma(float(word & 255u), s, b), fma(float((word >> 8u) & 255u), s, b),
                          fma(float((word >> 16u) & 255u), s, b), fma(float(word >> 24u), s, b));
      [[unroll]] for (uint t = 0u; t < TILE_T; ++t) {
        if (t < nt) {
          const vec4 a = x4[(t0 + t) * words + j];
          acc[t] += w.x * a.x + w.y * a.y + w.z * a.z + w.w * a.w;
        }
      }
    }
    [[unroll]] for (uint t = 0u; t < TILE_T; ++t) {
      if (t < nt) {
        const float sum = subgroupAdd(acc[t]);
        if (subgroupElect()) y[(t0 + t) * pc.rows + row] = sum;
      }
    }
  }
}
