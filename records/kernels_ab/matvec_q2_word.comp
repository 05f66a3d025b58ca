#version 450
// matvec_q (2-bit, MLX affine), an A/B variant (not bundled): the bundled kernel of
// 2026-11-25..27, before the bundled one took 16-byte loads (records/benchmarks-history.md, issue 13).
// y[r] = sum_c (q[r][c] * s[r][c/G] + b[r][c/G]) * x[c].
// Shape contract: w [rows, cols/16] uint (16 codes per word, code n at bits 2n..2n+1, low bits
// first), scales and biases [rows, cols/G] bf16 (two per uint, element 0 in the low half),
// x [cols] f32, y [rows] f32; G = group_size a multiple of 16 dividing cols (64 in every
// checkpoint: the A17B 2-bit experts, gate/up [1024, 4096] and down [4096, 1024]).
// The work split of matvec_q4 (which says why): a workgroup takes R consecutive rows (spec id
// 0) and its WG lanes stride over their words, U words per lane per step (spec id 1), every load
// of a step issued before any arithmetic; a lane's x (4 vec4 per word) serves R rows. Per row a
// subgroupAdd, then the subgroups' partials summed in shared memory: any subgroup size.
// Codes to floats without int->float conversion: code p of a 16-bit half h, masked in place and
// or-ed with the exponent of 2^(23-2p), is 2^(23-2p) + q exactly. Each term is fma(q, s, b) * x,
// the reference's (q*s is exact, so fma(q, s, b) is the dequantised weight with its one
// rounding, fused or not). Loads past the end are clamped and their terms skipped; rows past
// the end are not stored.
// Workgroup: WG (spec id 10) = enough lanes for a row's words in one step, at least R, at most 128.
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x = 128, local_size_x_id = 10) in;
layout(constant_id = 0) const uint R = 4;
layout(constant_id = 1) const uint U = 2;  // words per lane per step
const uint WG = gl_WorkGroupSize.x;
layout(std430, set = 0, binding = 0) readonly buffer Wq { uint wq[]; };
layout(std430, set = 0, binding = 1) readonly buffer S { uint scales[]; };
layout(std430, set = 0, binding = 2) readonly buffer Bi { uint biases[]; };
layout(std430, set = 0, binding = 3) readonly buffer X { vec4 x[]; };  // cols % 16 == 0: whole vec4s
layout(std430, set = 0, binding = 4) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint rows; uint cols; uint group_size; } pc;
shared float part[R * WG];  // [row][subgroup]

float bf16_at(uint word, uint i) { return uintBitsToFloat((i & 1u) == 0u ? word << 16 : word & 0xFFFF0000u); }
// Code p (0..7) of the low 16 bits of h as an exact float.
float code(uint h, uint p) {
  const uint e = (150u - 2u * p) << 23;  // 2^(23-2p): code p's lowest bit weighs 1
  return uintBitsToFloat((h & (3u << (2u * p))) | e) - uintBitsToFloat(e);
}

void main() {
  const uint words = pc.cols / 16u, groups = pc.cols / pc.group_size, words_per_group = pc.group_size / 16u;
  const uint t = gl_LocalInvocationID.x, row0 = gl_WorkGroupID.x * R;
  float acc[R];
  [[unroll]] for (uint r = 0u; r < R; ++r) acc[r] = 0.0;
  for (uint base = 0u; base < words; base += U * WG) {
    vec4 xv[4u * U];  // x[16j .. 16j+15]
    uint w[U * R];
    float s[U * R];
    float b[U * R];
    [[unroll]] for (uint u = 0u; u < U; ++u) {
      const uint j = min(base + u * WG + t, words - 1u), gj = j / words_per_group;
      [[unroll]] for (uint v = 0u; v < 4u; ++v) xv[4u * u + v] = x[4u * j + v];
      [[unroll]] for (uint r = 0u; r < R; ++r) {
        const uint row = min(row0 + r, pc.rows - 1u), g = row * groups + gj;
        w[u * R + r] = wq[row * words + j];
        s[u * R + r] = bf16_at(scales[g >> 1], g);
        b[u * R + r] = bf16_at(biases[g >> 1], g);
      }
    }
    [[unroll]] for (uint u = 0u; u < U; ++u) {
      if (base + u * WG + t >= words) break;  // later u are further past the end
      [[unroll]] for (uint r = 0u; r < R; ++r) {
        const uint wd = w[u * R + r], wh = wd >> 16;
        const float sc = s[u * R + r], bi = b[u * R + r];
        [[unroll]] for (uint p = 0u; p < 8u; ++p) acc[r] += fma(code(wd, p), sc, bi) * xv[4u * u + p / 4u][p % 4u];
        [[unroll]] for (uint p = 0u; p < 8u; ++p) acc[r] += fma(code(wh, p), sc, bi) * xv[4u * u + 2u + p / 4u][p % 4u];
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
