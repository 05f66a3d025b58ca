#version 450
// permute_gate_up_decode: permute_gate_up (stage 1 of moe_permute_fuse, compare/manifest/chains.h) at
// decode, one token: each bucket holds one row (permute_gate_up.comp takes two tokens or more).
// For every routed row r,
//   act[r][i] = silu(g) * u,  g = gate_b[i] . x[token_idx[r]],  u = up_b[i] . x[token_idx[r]],
// b = the bucket owning r, silu(g) = g / (1 + exp(-g)); act stored in f32.
// Streamed-expert layout (only the B routed experts are uploaded, in bucket order = expert ids
// ascending, the way a streaming engine packs them):
//   bucket_offsets [B + 1] u32   bucket b owns row bucket_offsets[b] (= b at one token)
//   token_idx [rows] i32         the token of each row (0 at one token)
//   gate.w, up.w [B, inter, hidden * BITS / 32] u32, gate/up.scales, .biases [B, inter, hidden / G]
//                                bf16 pairs: bucket b's matrix starts at row b * inter (MLX affine,
//                                codes low bits first, G = group_size a multiple of 128 / BITS: a
//                                quad, 4 words = 128 / BITS codes, lies inside one group)
//   x [tokens, hidden] f32, act [rows, inter] f32 row-major.
// Grid: x = inter / R (R rows of gate and of up per workgroup, spec id 0; the manifest makes R
// divide inter), y = B (one bucket).
// All WG lanes stride over the R rows' quads together, U quads per lane per step (spec id 3; lane
// l: quads base + u*WG + l; U = 2 where a row has more than 128 quads): a lane loads 16 bytes of
// a row at once with one scale and bias per quad; every load of a step is issued before any
// arithmetic; rows spread over the workgroup keep B * inter / R workgroups busy.
// Factored per quad as matvec_q4.comp: sum q x and sum x over the quad, then s * sum(q x) + b *
// sum(x) per row (sum x serves the R rows of gate and up): 3 instructions a code (mask-or, the
// FADD that makes q exact, the FFMA) where the per-term form of permute_gate_up.comp takes 4. As
// records/kernels_ab/permute_gate_up_fvec.comp, which also took tiles of tokens, it was faster at
// the decodes and slower with tiles of 3-16 tokens, which extract each code again per token:
// hence one kernel per case (records/kernels_ab/README.md, records/runs/2026-11-28-h200-permfvec.txt).
// Another rounding of the same sum, inside the op's bound, which the seed records test.
// No int->float conversion (quarter rate on NVIDIA): code p of a 16-bit half h, masked in place
// and or-ed with the exponent of E = 2^(23-BITS*p), is the float E + q exactly; minus E it is
// float(q) exactly. Loads past a row's end are clamped (last quad) and their sums skipped. Per row
// of gate and of up a subgroupAdd, then the subgroups' partials summed in shared memory: any
// subgroup size. g < -88: exp(-g) = +inf, silu = -0 (truth below 1e-36), never NaN.
// Workgroup: WG (spec id 10) = a row's quads / U lanes, >= R, <= 64: records/benchmarks-history.md.
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x = 128, local_size_x_id = 10) in;
layout(constant_id = 0) const uint R = 4;
layout(constant_id = 2) const uint BITS = 4;
layout(constant_id = 3) const uint U = 1;
const uint WG = gl_WorkGroupSize.x;
const uint CPW = 32u / BITS;   // codes per word
const uint HALF = 16u / BITS;  // codes per 16-bit half
const uint XPW = CPW / 4u;     // vec4 of x per word
const uint MASK = (1u << BITS) - 1u;
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
shared float part[2u * R * WG];  // [gate's rows, then up's][subgroup]

float bf16_at(uint word, uint i) { return uintBitsToFloat((i & 1u) == 0u ? word << 16 : word & 0xFFFF0000u); }
// Code n (0 .. CPW - 1) of word w as an exact float.
float code(uint w, uint n) {
  const uint h = n < HALF ? w : w >> 16, p = n % HALF;
  const uint e = (150u - BITS * p) << 23;  // 2^(23 - BITS p): code p's lowest bit weighs 1
  return uintBitsToFloat((h & (MASK << (BITS * p))) | e) - uintBitsToFloat(e);
}

void main() {
  const uint b = gl_WorkGroupID.y, l = gl_LocalInvocationID.x;
  const uint r = bucket_offsets[b];  // the bucket's one row
  const uint quads = pc.hidden * BITS / 128u, groups = pc.hidden / pc.group_size;
  const uint qpg = pc.group_size * BITS / 128u;  // quads per group
  const uint row0 = b * pc.inter + gl_WorkGroupID.x * R;  // first row of the packed [B * inter, ...]
  const uint xb = uint(token_idx[r]) * (pc.hidden / 4u);
  float ag[R];
  float au[R];
  [[unroll]] for (uint k = 0u; k < R; ++k) ag[k] = 0.0, au[k] = 0.0;
  for (uint base = 0u; base < quads; base += U * WG) {
    uvec4 wg[U * R];
    uvec4 wu[U * R];
    float sg[U * R];
    float bg[U * R];
    float su[U * R];
    float bu[U * R];
    [[unroll]] for (uint u = 0u; u < U; ++u) {
      const uint j = min(base + u * WG + l, quads - 1u);
      [[unroll]] for (uint k = 0u; k < R; ++k) {
        const uint row = row0 + k, q = row * quads + j, g = row * groups + j / qpg, i = u * R + k;
        wg[i] = gw[q];
        wu[i] = uw[q];
        sg[i] = bf16_at(gs[g >> 1], g);
        bg[i] = bf16_at(gb[g >> 1], g);
        su[i] = bf16_at(us[g >> 1], g);
        bu[i] = bf16_at(ub[g >> 1], g);
      }
    }
    [[unroll]] for (uint u = 0u; u < U; ++u) {
      const uint j = base + u * WG + l;
      if (j >= quads) break;
      float sqg[R];  // sum of q x over quad j, per row of gate
      float squ[R];  // and of up
      [[unroll]] for (uint k = 0u; k < R; ++k) sqg[k] = 0.0, squ[k] = 0.0;
      vec4 sx4 = vec4(0.0);  // sum of x over quad j, in 4 lanes
      [[unroll]] for (uint w = 0u; w < 4u; ++w) {  // word w of the quad: x vec4s j CPW + w XPW ..
        [[unroll]] for (uint v = 0u; v < XPW; ++v) {
          const vec4 a = x4[xb + j * CPW + w * XPW + v];
          sx4 += a;
          [[unroll]] for (uint k = 0u; k < R; ++k) {
            [[unroll]] for (uint e = 0u; e < 4u; ++e) {
              sqg[k] = fma(code(wg[u * R + k][w], 4u * v + e), a[e], sqg[k]);
              squ[k] = fma(code(wu[u * R + k][w], 4u * v + e), a[e], squ[k]);
            }
          }
        }
      }
      const float sx = (sx4.x + sx4.y) + (sx4.z + sx4.w);
      [[unroll]] for (uint k = 0u; k < R; ++k) {
        ag[k] += fma(sg[u * R + k], sqg[k], bg[u * R + k] * sx);
        au[k] += fma(su[u * R + k], squ[k], bu[u * R + k] * sx);
      }
    }
  }
  [[unroll]] for (uint k = 0u; k < R; ++k) {
    const float g = subgroupAdd(ag[k]), u = subgroupAdd(au[k]);
    if (subgroupElect()) part[k * WG + gl_SubgroupID] = g, part[(R + k) * WG + gl_SubgroupID] = u;
  }
  barrier();
  if (l < R) {  // WG >= R (the manifest)
    float g = 0.0, u = 0.0;
    for (uint s = 0u; s < gl_NumSubgroups; ++s) g += part[l * WG + s], u += part[(R + l) * WG + s];
    act[r * pc.inter + gl_WorkGroupID.x * R + l] = g / (1.0 + exp(-g)) * u;
  }
}
