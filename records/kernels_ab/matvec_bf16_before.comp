#version 450
// The bundled matvec_bf16 until 2026-11-27 (an element per lane, a subgroup per row): the A/B
// baseline of the 16-byte one (bench/kernels_ab/build.sh, bf16tune.json).
// matvec_bf16: y[r] = sum_c W[r][c] * x[c], W unquantised bf16 (DeepSeek-V3 router gate
// [256, 7168]).
// Shape contract: W [rows, cols] bf16 row-major, two per uint (element e = r*cols + c in word
// e/2, even elements in the low half; cols may be odd, so a row may start in a word's high
// half), x [cols] f32, y [rows] f32; any rows >= 0, cols >= 1.
// ROWS_PER_WG rows per workgroup (dispatch ceil_div(rows, 4)); the workgroup's subgroups take
// the rows in turn, a subgroup's lanes stride over the row's columns (adjacent lanes read
// adjacent elements), acc = fma(w, x, acc) per lane, then subgroupAdd: correct for every
// subgroup size. bf16 -> f32 widening is exact (the high half of the f32).
// Workgroup: WG = min(128, invocations the device allows at the subgroup size), spec id 10.
#extension GL_KHR_shader_subgroup_arithmetic : require
layout(local_size_x = 128, local_size_x_id = 10) in;
layout(constant_id = 0) const uint ROWS_PER_WG = 4;
layout(std430, set = 0, binding = 0) readonly buffer W { uint w[]; };
layout(std430, set = 0, binding = 1) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint rows; uint cols; } pc;

float bf16_at(uint e) {
  const uint word = w[e >> 1];
  return uintBitsToFloat((e & 1u) == 0u ? word << 16 : word & 0xFFFF0000u);
}

void main() {
  for (uint k = gl_SubgroupID; k < ROWS_PER_WG; k += gl_NumSubgroups) {
    const uint row = gl_WorkGroupID.x * ROWS_PER_WG + k;
    if (row >= pc.rows) break;  // uniform within the subgroup
    const uint base = row * pc.cols;
    float acc = 0.0;
    for (uint c = gl_SubgroupInvocationID; c < pc.cols; c += gl_SubgroupSize) acc = fma(bf16_at(base + c), x[c], acc);
    acc = subgroupAdd(acc);
    if (subgroupElect()) y[row] = acc;
  }
}
