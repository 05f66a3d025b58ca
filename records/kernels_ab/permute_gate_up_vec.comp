#version 450
// permute_gate_up_vec, an A/B variant (not bundled): 16-byte weight loads, slower than the bundled
// word-per-lane kernel on the H100 at every shape and tile tried (records/benchmarks-history.md, issue 13).
// permute_gate_up (stage 1 of moe_permute_fuse, compare/run/chains.h): for every routed row r,
//   act[r][i] = silu(g) * u,  g = gate_b[i] . x[token_idx[r]],  u = up_b[i] . x[token_idx[r]],
// b = the bucket owning r, silu(g) = g / (1 + exp(-g)); act stored in f32.
// Streamed-expert layout (only the B routed experts are uploaded, in bucket order = expert ids
// ascending, the way a streaming engine packs them):
//   bucket_offsets [B + 1] u32   bucket b owns rows [bucket_offsets[b], bucket_offsets[b + 1]);
//                                bucket_offsets[0] = 0, bucket_offsets[B] = rows = tokens * k
//   token_idx [rows] i32         the token of each row; a bucket holds a token at most once, so
//                                a bucket has <= tokens rows (the CPU op's row order)
//   gate.w, up.w [B, inter, hidden * BITS / 32] u32, gate/up.scales, .biases [B, inter, hidden / G]
//                                bf16 pairs: bucket b's matrix starts at row b * inter (MLX affine,
//                                codes low bits first, G = group_size a multiple of 128 / BITS: a
//                                quad, 4 words = 128 / BITS codes, lies inside one group)
//   x [tokens, hidden] f32, act [rows, inter] f32 row-major.
// Grid: x = inter / R (R rows of gate and of up per workgroup, spec id 0; the manifest makes R
// divide inter), y = B (one bucket), z = ceil_div(tokens, TILE_T) (a tile of TILE_T = min(8,
// tokens) of the bucket's rows, spec id 1; tiles past the bucket's end exit).
// All WG lanes stride over the R rows' quads together, U quads per lane per step (spec id 3; lane
// l: quads base + u*WG + l; U = 2 where a row has more than 128 quads). Why (as matvec_q4.comp): a
// lane loads 16 bytes of a row at once with one scale and bias per quad, a quarter of the
// word-per-lane kernel's loads; every load of a step (2 R U quads, their scales and biases) is
// issued before any arithmetic; rows spread over the whole workgroup keep B * inter / R workgroups
// busy at decode (one token per bucket). A word's codes are dequantised once per tile and serve its
// TILE_T tokens; each term is fma(q, s, b) * x, the reference's. No int->float conversion (quarter
// rate on NVIDIA): code p of a 16-bit half h, masked in place and or-ed with the exponent of E =
// 2^(23-BITS*p), is the float E + q exactly; minus E it is float(q) exactly. Loads past a row's end
// are clamped (last quad) and their terms skipped. Per (row, token) of gate and of up a
// subgroupAdd, then the subgroups' partials summed in shared memory: any subgroup size. g < -88:
// exp(-g) = +inf, silu = -0 (truth below 1e-36), never NaN.
// Workgroup: WG (spec id 10) = enough lanes for a row's quads in one step, at least R * TILE_T,
// at most 128.
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x = 128, local_size_x_id = 10) in;
layout(constant_id = 0) const uint R = 4;
layout(constant_id = 1) const uint TILE_T = 8;
layout(constant_id = 2) const uint BITS = 4;
layout(constant_id = 3) const uint U = 1;
const uint WG = gl_WorkGroupSize.x;
const uint CPW = 32u / BITS;   // codes per word
const uint HALF = 16u / BITS;  // codes per 16-bit half
const uint CPQ = 4u * CPW;     // codes per quad
const uint XPW = CPW / 4u;     // vec4 of x per word
const uint MASK = (1u << BITS) - 1u;
const uint RT = R * TILE_T;    // (row, token) pairs of a workgroup
layout(std430, set = 0, binding = 0) readonly buffer Gw { uvec4 gw[]; };  // whole quads per row
layout(std430, set = 0, binding = 1) readonly buffer Gs { uint gs[]; };
layout(std430, set = 0, binding = 2) readonly buffer Gb { uint gb[]; };
layout(std430, set = 0, binding = 3) readonly buffer Uw { uvec4 uw[]; };
layout(std430, set = 0, binding = 4) readonly buffer Us { uint us[]; };
layout(std430, set = 0, binding = 5) readonly buffer Ub { uint ub[]; };
layout(std430, set = 0, binding = 6) readonly buffer X { vec4 x4[]; };  // hidden % 4 == 0
layout(std430, set = 0, binding = 7) readonly buffer Off { uint bucket_offsets[]; };
layout(std430, set = 0, binding = 8) readonly buffer Tok { int token_idx[]; };
layout(std430, set = 0, binding = 9) writeonly buffer Act { float act[]; };
layout(push_constant) uniform Push { uint inter; uint hidden; uint group_size; } pc;
shared float part[2u * RT * WG];  // [gate's (row, token) pairs, then up's][subgroup]

float bf16_at(uint word, uint i) { return uintBitsToFloat((i & 1u) == 0u ? word << 16 : word & 0xFFFF0000u); }
// Code n (0 .. CPW - 1) of word w as an exact float.
float code(uint w, uint n) {
  const uint h = n < HALF ? w : w >> 16, p = n % HALF;
  const uint e = (150u - BITS * p) << 23;  // 2^(23 - BITS p): code p's lowest bit weighs 1
  return uintBitsToFloat((h & (MASK << (BITS * p))) | e) - uintBitsToFloat(e);
}

void main() {
  const uint b = gl_WorkGroupID.y, l = gl_LocalInvocationID.x;
  const uint r0 = bucket_offsets[b] + gl_WorkGroupID.z * TILE_T, r_end = bucket_offsets[b + 1u];
  if (r0 >= r_end) return;  // uniform: this tile lies past the bucket's rows
  const uint nt = min(TILE_T, r_end - r0);
  const uint quads = pc.hidden / CPQ, groups = pc.hidden / pc.group_size, qpg = pc.group_size / CPQ;
  const uint row0 = b * pc.inter + gl_WorkGroupID.x * R;  // first row of the packed [B * inter, ...]
  uint xbase[TILE_T];
  [[unroll]] for (uint t = 0u; t < TILE_T; ++t) xbase[t] = t < nt ? uint(token_idx[r0 + t]) * (pc.hidden / 4u) : 0u;
  float ag[R][TILE_T], au[R][TILE_T];  // sized by spec constants alone: poisoned where unset
  [[unroll]] for (uint r = 0u; r < R; ++r)
    [[unroll]] for (uint t = 0u; t < TILE_T; ++t) ag[r][t] = 0.0, au[r][t] = 0.0;
  for (uint base = 0u; base < quads; base += U * WG) {
    uvec4 wg[U * R], wu[U * R];
    float sg[U * R], bg[U * R], su[U * R], bu[U * R];
    [[unroll]] for (uint u = 0u; u < U; ++u) {
      const uint j = min(base + u * WG + l, quads - 1u);
      [[unroll]] for (uint r = 0u; r < R; ++r) {
        const uint row = row0 + r, q = row * quads + j, g = row * groups + j / qpg;
        wg[u * R + r] = gw[q], wu[u * R + r] = uw[q];
        sg[u * R + r] = bf16_at(gs[g >> 1], g), bg[u * R + r] = bf16_at(gb[g >> 1], g);
        su[u * R + r] = bf16_at(us[g >> 1], g), bu[u * R + r] = bf16_at(ub[g >> 1], g);
      }
    }
    [[unroll]] for (uint u = 0u; u < U; ++u) {
      const uint j = base + u * WG + l;
      if (j >= quads) break;
      [[unroll]] for (uint k = 0u; k < 4u; ++k) {  // word k of the quad: x vec4s j CPW + k XPW ..
        [[unroll]] for (uint r = 0u; r < R; ++r) {
          const uint i = u * R + r;
          float dg[CPW], du[CPW];
          [[unroll]] for (uint n = 0u; n < CPW; ++n) {
            dg[n] = fma(code(wg[i][k], n), sg[i], bg[i]);
            du[n] = fma(code(wu[i][k], n), su[i], bu[i]);
          }
          [[unroll]] for (uint t = 0u; t < TILE_T; ++t) {
            if (t >= nt) break;
            [[unroll]] for (uint v = 0u; v < XPW; ++v) {
              const vec4 a = x4[xbase[t] + j * CPW + k * XPW + v];
              [[unroll]] for (uint e = 0u; e < 4u; ++e) {
                ag[r][t] += dg[4u * v + e] * a[e];
                au[r][t] += du[4u * v + e] * a[e];
              }
            }
          }
        }
      }
    }
  }
  [[unroll]] for (uint r = 0u; r < R; ++r) {
    [[unroll]] for (uint t = 0u; t < TILE_T; ++t) {
      const uint i = r * TILE_T + t;
      const float g = subgroupAdd(ag[r][t]), u = subgroupAdd(au[r][t]);
      if (subgroupElect()) part[i * WG + gl_SubgroupID] = g, part[(RT + i) * WG + gl_SubgroupID] = u;
    }
  }
  barrier();
  if (l < RT && l % TILE_T < nt) {  // WG >= R * TILE_T (the manifest); pair l = (row, token)
    float g = 0.0, u = 0.0;
    for (uint s = 0u; s < gl_NumSubgroups; ++s) g += part[l * WG + s], u += part[(RT + l) * WG + s];
    act[(r0 + l % TILE_T) * pc.inter + gl_WorkGroupID.x * R + l / TILE_T] = g / (1.0 + exp(-g)) * u;
  }
}
