#version 450
// A/B variant: the bundled matvec_q4 until 2026-11-27, when it took the factored form (compare/
// shaders/matvec_q4.comp): each term fma(q, s, b) * x, the reference's operation order.
// matvec_q (4-bit, MLX affine, group 64): y[r] = sum_c (q[r][c] * s[r][c/64] + b[r][c/64]) * x[c].
// Shape contract: w [rows, cols/8] uint (8 codes per word, low bits first), scales and biases
// [rows, cols/64] bf16 (two per uint), x [cols] f32, y [rows] f32; cols % 64 == 0.
// A workgroup takes R consecutive rows (spec id 0) and all its WG lanes stride over those rows'
// quads together (a quad: 4 words, 32 codes, half a group), U quads per lane per step (spec id 1;
// lane t: quads base + u*WG + t); the manifest picks R from rows, U and WG from rows and cols.
// Why: a lane loads 16 bytes of a row at once, with one scale and bias per 32 codes, so the
// loads and the scale extraction per weight are a quarter of a word-per-lane kernel's (on the
// H100 1.25x faster at the lm_heads: records/benchmarks-history.md); a lane's x (8 vec4 per quad) serves R
// rows; every load of a step is issued before any arithmetic; a row spread over the whole
// workgroup keeps ceil(rows / R) workgroups busy even with few rows. Per row a subgroupAdd, then
// the subgroups' partials summed in shared memory: any subgroup size.
// No int->float conversion (quarter rate on NVIDIA): code p of a 16-bit half h, masked in place
// and or-ed with the exponent of 2^(23-4p), is the float 2^(23-4p) + q exactly; minus 2^(23-4p)
// it is float(q) exactly. Each term is fma(q, s, b) * x, the reference's. Loads past the end are
// clamped (last row, last quad) and their terms skipped; rows past the end are not stored.
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

float bf16_at(uint word, uint i) { return uintBitsToFloat((i & 1u) == 0u ? word << 16 : word & 0xFFFF0000u); }
// Code p (0..3) of the low 16 bits of h as an exact float.
float code(uint h, uint p) {
  const uint e = (150u - 4u * p) << 23;  // 2^(23-4p): code p's lowest bit weighs 1
  return uintBitsToFloat((h & (15u << (4u * p))) | e) - uintBitsToFloat(e);
}

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
      [[unroll]] for (uint k = 0u; k < 4u; ++k) {
        const vec4 lo = x[8u * j + 2u * k], hi = x[8u * j + 2u * k + 1u];
        [[unroll]] for (uint r = 0u; r < R; ++r) {
          const uint wd = w[u * R + r][k], wh = wd >> 16;
          const float sc = s[u * R + r], bi = b[u * R + r];
          [[unroll]] for (uint p = 0u; p < 4u; ++p) acc[r] += fma(code(wd, p), sc, bi) * lo[p];
          [[unroll]] for (uint p = 0u; p < 4u; ++p) acc[r] += fma(code(wh, p), sc, bi) * hi[p];
        }
      }
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
