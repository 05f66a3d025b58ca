#version 450
// matvec_q (4-bit, MLX affine, group 64): y[r] = sum_c (q[r][c] * s[r][c/64] + b[r][c/64]) * x[c].
// Shape contract: w [rows, cols/8] uint (8 codes per word, low bits first), scales and biases
// [rows, cols/64] bf16 (two per uint), x [cols] f32, y [rows] f32; cols % 64 == 0.
// Each subgroup takes R consecutive rows at a time (ROWS_PER_WG = R * subgroups per workgroup,
// set by the manifest from the subgroup size; any value that is a multiple of R is correct, only
// the grid must match it). Its lanes stride over the words of those rows: a lane loads its 8 x
// values once and uses them for the R rows, so x is read from cache once per R rows rather than
// once per row (x traffic is 8 floats per 4-byte weight word: it, not the weights, bounded the
// one-row-per-subgroup form). Then one subgroupAdd per row: correct for every subgroup size. The
// last block's rows past the end are clamped to the last row (loads stay in bounds) and not
// stored. Each term is fma(q, s, b) * x, the reference's term.
// Workgroup: WG = min(128, invocations the device allows at the subgroup size), spec id 10.
#extension GL_KHR_shader_subgroup_arithmetic : require
layout(local_size_x = 128, local_size_x_id = 10) in;
layout(constant_id = 0) const uint ROWS_PER_WG = 16;
const uint R = 4u;
layout(std430, set = 0, binding = 0) readonly buffer Wq { uint wq[]; };
layout(std430, set = 0, binding = 1) readonly buffer S { uint scales[]; };
layout(std430, set = 0, binding = 2) readonly buffer Bi { uint biases[]; };
layout(std430, set = 0, binding = 3) readonly buffer X { vec4 x[]; };  // cols % 64 == 0: whole vec4s
layout(std430, set = 0, binding = 4) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint rows; uint cols; } pc;

float bf16_at(uint word, uint i) { return uintBitsToFloat((i & 1u) == 0u ? word << 16 : word & 0xFFFF0000u); }

void main() {
  const uint words = pc.cols / 8u, groups = pc.cols / 64u;
  for (uint k = gl_SubgroupID * R; k < ROWS_PER_WG; k += gl_NumSubgroups * R) {
    const uint row0 = gl_WorkGroupID.x * ROWS_PER_WG + k;
    if (row0 >= pc.rows) break;  // uniform within the subgroup
    float acc[R];
    for (uint r = 0u; r < R; ++r) acc[r] = 0.0;
    for (uint j = gl_SubgroupInvocationID; j < words; j += gl_SubgroupSize) {
      const vec4 lo = x[2u * j], hi = x[2u * j + 1u];  // x[8j .. 8j+7]
      for (uint r = 0u; r < R; ++r) {
        const uint row = min(row0 + r, pc.rows - 1u);
        const uint g = row * groups + j / 8u;  // 8 words per group of 64
        const float s = bf16_at(scales[g >> 1], g), b = bf16_at(biases[g >> 1], g);
        const uint word = wq[row * words + j];
        for (uint n = 0u; n < 4u; ++n) acc[r] += fma(float((word >> (4u * n)) & 15u), s, b) * lo[n];
        for (uint n = 0u; n < 4u; ++n) acc[r] += fma(float((word >> (4u * n + 16u)) & 15u), s, b) * hi[n];
      }
    }
    for (uint r = 0u; r < R; ++r) {
      const float sum = subgroupAdd(acc[r]);
      if (subgroupElect() && row0 + r < pc.rows) y[row0 + r] = sum;
    }
  }
}
