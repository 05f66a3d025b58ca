#version 450
// matvec_q (4-bit, MLX affine, group 64): y[r] = sum_c (q[r][c] * s[r][c/64] + b[r][c/64]) * x[c].
// Shape contract: w [rows, cols/8] uint (8 codes per word, low bits first), scales and biases
// [rows, cols/64] bf16 (two per uint), x [cols] f32, y [rows] f32; cols % 64 == 0.
// ROWS_PER_WG rows per workgroup (dispatch ceil_div(rows, 4)); the workgroup's subgroups take
// the rows in turn and a subgroup's lanes stride over the row's words, then subgroupAdd: correct
// for every subgroup size. Each term is fma(q, s, b) * x, the reference's term.
#extension GL_KHR_shader_subgroup_arithmetic : require
layout(local_size_x = 128) in;
layout(constant_id = 0) const uint ROWS_PER_WG = 4;
layout(std430, set = 0, binding = 0) readonly buffer Wq { uint wq[]; };
layout(std430, set = 0, binding = 1) readonly buffer S { uint scales[]; };
layout(std430, set = 0, binding = 2) readonly buffer Bi { uint biases[]; };
layout(std430, set = 0, binding = 3) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint rows; uint cols; } pc;

float bf16_at(uint word, uint i) { return uintBitsToFloat((i & 1u) == 0u ? word << 16 : word & 0xFFFF0000u); }

void main() {
  const uint words = pc.cols / 8u, groups = pc.cols / 64u;
  for (uint k = gl_SubgroupID; k < ROWS_PER_WG; k += gl_NumSubgroups) {
    const uint row = gl_WorkGroupID.x * ROWS_PER_WG + k;
    if (row >= pc.rows) break;  // uniform within the subgroup
    float acc = 0.0;
    for (uint j = gl_SubgroupInvocationID; j < words; j += 32u) {  // PLANTED BUG: assumes 32-wide subgroups
      const uint g = row * groups + j / 8u;  // 8 words per group of 64
      const float s = bf16_at(scales[g >> 1], g), b = bf16_at(biases[g >> 1], g);
      const uint word = wq[row * words + j];
      for (uint n = 0u; n < 8u; ++n) acc += fma(float((word >> (4u * n)) & 15u), s, b) * x[j * 8u + n];
    }
    acc = subgroupAdd(acc);
    if (subgroupElect()) y[row] = acc;
  }
}
