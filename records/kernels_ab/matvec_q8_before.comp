#version 450
// matvec_q (8-bit, MLX affine): y[r] = sum_c (q[r][c] * s[r][c/G] + b[r][c/G]) * x[c].
// Shape contract: w [rows, cols/4] uint (4 codes per word, byte n at bits 8n..8n+7, low byte
// first), scales and biases [rows, cols/G] bf16 (two per uint, element 0 in the low half),
// x [cols] f32, y [rows] f32; G = group_size a multiple of 4 dividing cols (64 in every
// checkpoint: A3B mlp.gate [256, 2048], shared_expert_gate [1, 2048]).
// ROWS_PER_WG rows per workgroup (dispatch ceil_div(rows, 4)); the workgroup's subgroups take
// the rows in turn and a subgroup's lanes stride over the row's words, then subgroupAdd: correct
// for every subgroup size. Each term is fma(q, s, b) * x, the reference's term (q*s is exact, so
// fma(q, s, b) is the dequantised weight with its one rounding, fused or not).
// Workgroup: WG = min(128, invocations the device allows at the subgroup size), spec id 10.
#extension GL_KHR_shader_subgroup_arithmetic : require
layout(local_size_x = 128, local_size_x_id = 10) in;
layout(constant_id = 0) const uint ROWS_PER_WG = 4;
layout(std430, set = 0, binding = 0) readonly buffer Wq { uint wq[]; };
layout(std430, set = 0, binding = 1) readonly buffer S { uint scales[]; };
layout(std430, set = 0, binding = 2) readonly buffer Bi { uint biases[]; };
layout(std430, set = 0, binding = 3) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint rows; uint cols; uint group_size; } pc;

float bf16_at(uint word, uint i) { return uintBitsToFloat((i & 1u) == 0u ? word << 16 : word & 0xFFFF0000u); }

void main() {
  const uint words = pc.cols / 4u, groups = pc.cols / pc.group_size, words_per_group = pc.group_size / 4u;
  for (uint k = gl_SubgroupID; k < ROWS_PER_WG; k += gl_NumSubgroups) {
    const uint row = gl_WorkGroupID.x * ROWS_PER_WG + k;
    if (row >= pc.rows) break;  // uniform within the subgroup
    float acc = 0.0;
    for (uint j = gl_SubgroupInvocationID; j < words; j += gl_SubgroupSize) {
      const uint g = row * groups + j / words_per_group;
      const float s = bf16_at(scales[g >> 1], g), b = bf16_at(biases[g >> 1], g);
      const uint word = wq[row * words + j];
      for (uint n = 0u; n < 4u; ++n) acc += fma(float((word >> (8u * n)) & 255u), s, b) * x[j * 4u + n];
    }
    acc = subgroupAdd(acc);
    if (subgroupElect()) y[row] = acc;
  }
}
