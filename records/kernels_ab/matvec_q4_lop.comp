#version 450
// records/kernels_ab: the bundled matvec_q4 of 2026-11-27 23:36 .. 2026-11-28 (7cec97e): one logic operation a
// code. Not kept: slower than the two-operation form on the H100 (records/benchmarks-history.md).
// matvec_q (4-bit, MLX affine, group 64): y[r] = sum_c (q[r][c] * s[r][c/64] + b[r][c/64]) * x[c],
// evaluated factored per 32 codes j (a quad, half a group): sum_j s * (sum_{c in j} q x) + b * (sum_{c in j} x).
// Shape contract: w [rows, cols/8] uint (8 codes per word, low bits first), scales and biases
// [rows, cols/64] bf16 (two per uint), x [cols] f32, y [rows] f32; cols % 64 == 0.
// Why factored (as matvec_q2): the per-term form fma(q, s, b) * x (records/kernels_ab/matvec_q4_term.comp,
// bundled until 2026-11-27) costs 4 instructions per code and row (mask-or, the FADD that makes q
// exact, the dequantising FFMA, the accumulating FFMA); this one 3 (mask-or, FADD, FFMA into sum q x),
// the sum of x once per quad for all R rows, and s * sq + b * sx per quad and row: on the H100 the
// A17B lm_head 71.3 -> 82.4 % of copy, A3B 63.7 -> 69.9 % (records/benchmarks-history.md). The result is another
// rounding of the same sum, inside matvec_q's bound (compare/cases/matvec_q_case.cpp: gamma_{cols+1}
// sum|t x|; this form's own worst case is about (34 + cols/32) u (|s| sum|q x| + |b| sum|x|)), which
// the seed records test.
// A workgroup takes R consecutive rows (spec id 0) and all its WG lanes stride over those rows'
// quads together (a quad: 4 words, 32 codes), U quads per lane per step (spec id 1; lane t: quads
// base + u*WG + t); the manifest picks R from rows, U and WG from rows and cols.
// Why: a lane loads 16 bytes of a row at once, with one scale and bias per 32 codes, so the
// loads and the scale extraction per weight are a quarter of a word-per-lane kernel's (on the
// H100 1.25x faster at the lm_heads: records/benchmarks-history.md); a lane's x (8 vec4 per quad) serves R
// rows; every load of a step is issued before any arithmetic; a row spread over the whole
// workgroup keeps ceil(rows / R) workgroups busy even with few rows. Per row a subgroupAdd, then
// the subgroups' partials summed in shared memory: any subgroup size.
// No int->float conversion (quarter rate on NVIDIA) and one logic operation a code: each
// 16-bit half h is or-ed once with the exponent of 2^23 (t = h | EXP23); code p is then
// t & (EXP23 | mask << 4p), the float 2^23 + q 2^(4p) exactly, and minus 2^23 q 2^(4p) exactly.
// x is scaled by 2^-4p once per quad for all R rows, so each product is q x exactly and every
// sum rounds as with float(q) x. As MLX's own qmv does (it divides x by 16, 256, ... per
// position). Why: the former form, (h & mask << 4p) | exponent_p, needs two constants and
// a Hopper LOP3 takes one; on the H200 (2026-11-27) this one is 0.99-1.04x at 4 bits and
// 1.00-1.20x at 2 bits (records/benchmarks-history.md). Domain: |x| >= 2^-114 or 0; below that
// x 2^-4p is subnormal and a driver that flushes it loses the term (activations never are).
// Loads past the end are clamped (last row, last quad) and their sums
// skipped; rows past the end are not stored.
// Workgroup: WG (spec id 10) = enough lanes for a row's quads in one step, at least R, at most 64 U.
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x = 128, local_size_x_id = 10) in;
layout(constant_id = 0) const uint R = 4;
layout(constant_id = 1) const uint U = 1;
const uint WG = gl_WorkGroupSize.x;
layout(std430, set = 0, binding = 0) readonly buffer Wq { uvec4 wq[]; };  // cols % 64: whole uvec4s per row
layout(std430, set = 0, binding = 1) readonly buffer S { uint scales[]; };
layout(std430, set = 0, binding = 2) readonly buffer Bi { uint biases[]; };
layout(std430, set = 0, binding = 3) readonly buffer X { vec4 x[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint rows; uint cols; } pc;
shared float part[R * WG];  // [row][subgroup]

const uint EXP23 = 150u << 23;  // the exponent field of 2^23
// Code p (0..3) of a half t = h | EXP23, in place: q 2^(4p) exactly (< 2^16).
float field(uint t, uint p) { return uintBitsToFloat(t & (EXP23 | (15u << (4u * p)))) - 8388608.0; }
const vec4 SC = vec4(1.0, 0.0625, 0.00390625, 0.000244140625);  // 16^-p
float bf16_at(uint word, uint i) { return uintBitsToFloat((i & 1u) == 0u ? word << 16 : word & 0xFFFF0000u); }

void main() {
  const uint quads = pc.cols / 32u, groups = pc.cols / 64u, t = gl_LocalInvocationID.x;
  const uint row0 = gl_WorkGroupID.x * R;
  float acc[R];
  [[unroll]] for (uint r = 0u; r < R; ++r) acc[r] = 0.0;
  for (uint base = 0u; base < quads; base += U * WG) {
    uvec4 w[U * R];
    float s[U * R];
    float b[U * R];
    [[unroll]] for (uint u = 0u; u < U; ++u) {
      const uint j = min(base + u * WG + t, quads - 1u);
      [[unroll]] for (uint r = 0u; r < R; ++r) {
        const uint row = min(row0 + r, pc.rows - 1u), g = row * groups + j / 2u;
        w[u * R + r] = wq[row * quads + j];
        s[u * R + r] = bf16_at(scales[g >> 1], g);
        b[u * R + r] = bf16_at(biases[g >> 1], g);
      }
    }
    [[unroll]] for (uint u = 0u; u < U; ++u) {
      const uint j = base + u * WG + t;
      if (j >= quads) break;
      float sq[R];  // sum of q x over quad j, per row
      [[unroll]] for (uint r = 0u; r < R; ++r) sq[r] = 0.0;
      vec4 sx4 = vec4(0.0);  // sum of x over quad j, in 4 lanes
      [[unroll]] for (uint k = 0u; k < 4u; ++k) {
        const vec4 lo = x[8u * j + 2u * k], hi = x[8u * j + 2u * k + 1u];
        sx4 += lo + hi;
        const vec4 los = lo * SC, his = hi * SC;
        [[unroll]] for (uint r = 0u; r < R; ++r) {
          const uint wd = w[u * R + r][k], tl = (wd & 0xFFFFu) | EXP23, th = (wd >> 16) | EXP23;
          [[unroll]] for (uint p = 0u; p < 4u; ++p) sq[r] = fma(field(tl, p), los[p], sq[r]);
          [[unroll]] for (uint p = 0u; p < 4u; ++p) sq[r] = fma(field(th, p), his[p], sq[r]);
        }
      }
      const float sx = (sx4.x + sx4.y) + (sx4.z + sx4.w);
      [[unroll]] for (uint r = 0u; r < R; ++r) acc[r] += fma(s[u * R + r], sq[r], b[u * R + r] * sx);
    }
  }
  [[unroll]] for (uint r = 0u; r < R; ++r) {
    const float sum = subgroupAdd(acc[r]);
    if (subgroupElect()) part[r * WG + gl_SubgroupID] = sum;
  }
  barrier();
  if (t < R && row0 + t < pc.rows) {  // WG >= R (the manifest)
    float sum = 0.0;
    for (uint i = 0u; i < gl_NumSubgroups; ++i) sum += part[t * WG + i];
    y[row0 + t] = sum;
  }
}
