#version 450
// The bundled matmul_q4 until issue 13 (one row per subgroup, a word per lane): kept for A/B timing.
// matmul_q (4-bit, MLX affine, group 64): Y[t][r] = sum_c (q[r][c] * s[r][c/64] + b[r][c/64]) * X[t][c].
// Shape contract: w [rows, cols/8] uint (8 codes per word, low bits first), scales and biases
// [rows, cols/64] bf16 (two per uint, element 0 in the low half), X [tokens, cols] f32 row-major,
// Y [tokens, rows] f32 row-major; cols % 64 == 0, tokens >= 1.
// Grid: x = ceil_div(rows, ROWS_PER_WG), y = ceil_div(tokens, TILE_T). A workgroup's subgroups
// take its rows in turn (correct for every subgroup size; ROWS_PER_WG = WG / subgroup_size only
// sizes the grid so that no subgroup idles); a subgroup's lanes stride over the row's words
// (coalesced), dequantise each word once and use it for the TILE_T tokens of the workgroup, then
// subgroupAdd per token. TILE_T = min(8, tokens): decode (T = 1) does no wasted work, prefill
// reads each weight word ceil(T / 8) times instead of T times. Each term is fma(q, s, b) * x, the
// reference's term. Per-invocation loop trips: words / subgroup_size (lavapipe ends loops at 65535).
// Workgroup: WG = min(128, invocations the device allows at the subgroup size), spec id 10.
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x = 128, local_size_x_id = 10) in;
layout(constant_id = 0) const uint ROWS_PER_WG = 4;
layout(constant_id = 1) const uint TILE_T = 8;
layout(std430, set = 0, binding = 0) readonly buffer Wq { uint wq[]; };
layout(std430, set = 0, binding = 1) readonly buffer S { uint scales[]; };
layout(std430, set = 0, binding = 2) readonly buffer Bi { uint biases[]; };
layout(std430, set = 0, binding = 3) readonly buffer X { vec4 x4[]; };  // cols % 64 == 0: rows are vec4-aligned
layout(std430, set = 0, binding = 4) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint rows; uint cols; uint tokens; } pc;

float bf16_at(uint word, uint i) { return uintBitsToFloat((i & 1u) == 0u ? word << 16 : word & 0xFFFF0000u); }

void main() {
  const uint words = pc.cols / 8u, groups = pc.cols / 64u, xrow = pc.cols / 4u;
  const uint t0 = gl_WorkGroupID.y * TILE_T;
  const uint nt = min(TILE_T, pc.tokens - t0);  // the last tile may be partial
  for (uint k = gl_SubgroupID; k < ROWS_PER_WG; k += gl_NumSubgroups) {
    const uint row = gl_WorkGroupID.x * ROWS_PER_WG + k;
    if (row >= pc.rows) break;  // uniform within the subgroup
    float acc[TILE_T];
    [[unroll]] for (uint t = 0u; t < TILE_T; ++t) acc[t] = 0.0;
    for (uint j = gl_SubgroupInvocationID; j < words; j += gl_SubgroupSize) {
      const uint g = row * groups + j / 8u;  // 8 words per group of 64
      const float s = bf16_at(scales[g >> 1], g), b = bf16_at(biases[g >> 1], g);
      const uint word = wq[row * words + j];
      float w[8];
      [[unroll]] for (uint n = 0u; n < 8u; ++n) w[n] = fma(float((word >> (4u * n)) & 15u), s, b);
      [[unroll]] for (uint t = 0u; t < TILE_T; ++t) {
        if (t < nt) {
          const uint xi = (t0 + t) * xrow + 2u * j;
          const vec4 a = x4[xi], c = x4[xi + 1u];
          acc[t] += w[0] * a.x + w[1] * a.y + w[2] * a.z + w[3] * a.w + w[4] * c.x + w[5] * c.y + w[6] * c.z +
                    w[7] * c.w;
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
