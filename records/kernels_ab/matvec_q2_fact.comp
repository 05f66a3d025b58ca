#version 450
// records/kernels_ab: the bundled matvec_q2 until 7cec97e (2026-11-27): factored, two logic operations a code.
// matvec_q (2-bit, MLX affine): y[r] = sum_c (q[r][c] * s[r][c/G] + b[r][c/G]) * x[c], evaluated
// factored per 64 codes j (within one group): sum_j s * (sum_{c in j} q x) + b * (sum_{c in j} x).
// Shape contract: w [rows, cols/16] uint (16 codes per word, code n at bits 2n..2n+1, low bits
// first), scales and biases [rows, cols/G] bf16 (two per uint, element 0 in the low half),
// x [cols] f32, y [rows] f32; G = group_size a multiple of 64 dividing cols (64 in every
// checkpoint: the A17B 2-bit experts), so cols % 64 == 0 and a row is whole uvec4s.
// Why factored: at 2 bits the H100 is bound by instructions per byte (records/benchmarks-history.md). The
// per-term form fma(q, s, b) * x (records/kernels_ab/matvec_q2_term.comp, bundled until 2026-11-27)
// costs 4 per code and row (mask-or, the FADD that makes q exact, the dequantising FFMA, the
// accumulating FFMA); this one 3 (mask-or, FADD, FFMA into sum q x), the sum of x once per 64
// codes for all R rows, and s * sq + b * sx per 64 codes and row: 1.2x at the lm_heads. The
// result is another rounding of the same sum, inside matvec_q's bound for the shapes checked
// (compare/cases/matvec_q_case.cpp: gamma_{cols+1} sum|t x|; this form's own worst case is
// about (66 + cols/64) u (|s| sum|q x| + |b| sum|x|)), which the seed records test.
// The work split of matvec_q4 (which says why): a workgroup takes R consecutive rows (spec id 0)
// and its WG lanes stride over those rows' quads together (a quad: 4 words, 64 codes, a whole
// group at G = 64), U quads per lane per step (spec id 1; lane t: quads base + u*WG + t).
// Why quads: a lane loads 16 bytes of a row at once and one scale and bias per 64 codes, a
// quarter of the loads and of the scale extractions per weight of a word-per-lane kernel (at 2
// bits instructions per byte, not memory, bound it: records/benchmarks-history.md); the weight, scale and
// bias loads of a step are all issued before any arithmetic; a lane's x (16 vec4 per quad, read
// word by word) serves R rows. Per row a subgroupAdd, then the subgroups' partials summed in
// shared memory: any subgroup size. G = 32 (allowed by the word-per-lane kernel) is not: a quad
// would need two scales, and cols = 32 (mod 64) rows are not whole uvec4s.
// No int->float conversion (quarter rate on NVIDIA): code p of a 16-bit half h, masked in place
// and or-ed with the exponent of 2^(23-2p), is the float 2^(23-2p) + q exactly; minus 2^(23-2p)
// it is float(q) exactly. Loads past the end are clamped (last row, last quad) and their sums
// skipped; rows past the end are not stored.
// Workgroup: WG (spec id 10) = enough lanes for a row's quads in one step, at least R, at most 128.
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
// quads_per_group = G / 64 (the manifest): a quad's group is j / quads_per_group.
layout(push_constant) uniform Push { uint rows; uint cols; uint quads_per_group; } pc;
shared float part[R * WG];  // [row][subgroup]

float bf16_at(uint word, uint i) { return uintBitsToFloat((i & 1u) == 0u ? word << 16 : word & 0xFFFF0000u); }
// Code p (0..7) of the low 16 bits of h as an exact float.
float code(uint h, uint p) {
  const uint e = (150u - 2u * p) << 23;  // 2^(23-2p): code p's lowest bit weighs 1
  return uintBitsToFloat((h & (3u << (2u * p))) | e) - uintBitsToFloat(e);
}

void main() {
  const uint quads = pc.cols / 64u, groups = quads / pc.quads_per_group, t = gl_LocalInvocationID.x;
  const uint row0 = gl_WorkGroupID.x * R;
  float acc[R];
  [[unroll]] for (uint r = 0u; r < R; ++r) acc[r] = 0.0;
  for (uint base = 0u; base < quads; base += U * WG) {
    uvec4 w[U * R];
    float s[U * R];
    float b[U * R];
    [[unroll]] for (uint u = 0u; u < U; ++u) {
      const uint j = min(base + u * WG + t, quads - 1u), gj = j / pc.quads_per_group;
      [[unroll]] for (uint r = 0u; r < R; ++r) {
        const uint row = min(row0 + r, pc.rows - 1u), g = row * groups + gj;
        w[u * R + r] = wq[row * quads + j];
        s[u * R + r] = bf16_at(scales[g >> 1], g);
        b[u * R + r] = bf16_at(biases[g >> 1], g);
      }
    }
    [[unroll]] for (uint u = 0u; u < U; ++u) {
      const uint j = base + u * WG + t;
      if (j >= quads) break;  // later u are further past the end
      float sq[R];  // sum of q x over quad j, per row
      [[unroll]] for (uint r = 0u; r < R; ++r) sq[r] = 0.0;
      vec4 sx4 = vec4(0.0);  // sum of x over quad j (one group at G = 64), in 4 lanes
      [[unroll]] for (uint k = 0u; k < 4u; ++k) {
        vec4 xv[4];  // x of word k: codes 16k .. 16k+15 of quad j
        [[unroll]] for (uint v = 0u; v < 4u; ++v) xv[v] = x[16u * j + 4u * k + v];
        sx4 += (xv[0] + xv[1]) + (xv[2] + xv[3]);
        [[unroll]] for (uint r = 0u; r < R; ++r) {
          const uint wd = w[u * R + r][k], wh = wd >> 16;
          [[unroll]] for (uint p = 0u; p < 8u; ++p) sq[r] = fma(code(wd, p), xv[p / 4u][p % 4u], sq[r]);
          [[unroll]] for (uint p = 0u; p < 8u; ++p) sq[r] = fma(code(wh, p), xv[2u + p / 4u][p % 4u], sq[r]);
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
