#version 450
// permute_gate_up (stage 1 of moe_permute_fuse, compare/manifest/chains.h): for every routed row r,
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
//                                codes low bits first, G = group_size a multiple of 32 / BITS)
//   x [tokens, hidden] f32, act [rows, inter] f32 row-major.
// Grid: x = ceil_div(inter, ROWS_PER_WG) (subgroups take rows in turn, lanes stride over a row's
// words of gate and up together: coalesced), y = B (one bucket), z = ceil_div(tokens, TILE_T)
// (a tile of TILE_T = min(8, tokens) of the bucket's rows; tiles past the bucket's end exit).
// Weights are dequantised once per tile; terms fma(q, s, b) * x as the reference; two
// subgroupAdds per row. g < -88: exp(-g) = +inf, silu = -0 (truth below 1e-36), never NaN.
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x = 128) in;
layout(constant_id = 0) const uint ROWS_PER_WG = 4;
layout(constant_id = 1) const uint TILE_T = 8;
layout(constant_id = 2) const uint BITS = 4;
const uint CODES = 32u / BITS;
const uint MASK = (1u << BITS) - 1u;
layout(std430, set = 0, binding = 0) readonly buffer Gw { uint gw[]; };
layout(std430, set = 0, binding = 1) readonly buffer Gs { uint gs[]; };
layout(std430, set = 0, binding = 2) readonly buffer Gb { uint gb[]; };
layout(std430, set = 0, binding = 3) readonly buffer Uw { uint uw[]; };
layout(std430, set = 0, binding = 4) readonly buffer Us { uint us[]; };
layout(std430, set = 0, binding = 5) readonly buffer Ub { uint ub[]; };
layout(std430, set = 0, binding = 6) readonly buffer X { vec4 x4[]; };  // hidden % 4 == 0
layout(std430, set = 0, binding = 7) readonly buffer Off { uint bucket_offsets[]; };
layout(std430, set = 0, binding = 8) readonly buffer Tok { int token_idx[]; };
layout(std430, set = 0, binding = 9) writeonly buffer Act { float act[]; };
layout(push_constant) uniform Push { uint inter; uint hidden; uint group_size; } pc;

float bf16_at(uint word, uint i) { return uintBitsToFloat((i & 1u) == 0u ? word << 16 : word & 0xFFFF0000u); }

void main() {
  const uint b = gl_WorkGroupID.y;
  const uint r0 = bucket_offsets[b] + gl_WorkGroupID.z * TILE_T, r_end = bucket_offsets[b + 1u];
  if (r0 >= r_end) return;  // uniform: this tile lies past the bucket's rows
  const uint nt = min(TILE_T, r_end - r0);
  const uint words = pc.hidden / CODES, groups = pc.hidden / pc.group_size, wpg = pc.group_size / CODES;
  const uint xrow = pc.hidden / 4u;
  uint xbase[TILE_T];
  [[unroll]] for (uint t = 0u; t < TILE_T; ++t) xbase[t] = t < nt ? uint(token_idx[r0 + t]) * xrow : 0u;
  for (uint k = gl_SubgroupID; k < ROWS_PER_WG; k += gl_NumSubgroups) {
    const uint i = gl_WorkGroupID.x * ROWS_PER_WG + k;
    if (i >= pc.inter) break;  // uniform within the subgroup
    const uint row = min(b + 1u, gl_NumWorkGroups.y - 1u) * pc.inter + i;  // PLANTED: the next bucket's expert
    float ag[TILE_T], au[TILE_T];
    [[unroll]] for (uint t = 0u; t < TILE_T; ++t) ag[t] = 0.0, au[t] = 0.0;
    for (uint j = gl_SubgroupInvocationID; j < words; j += gl_SubgroupSize) {
      const uint g = row * groups + j / wpg;
      const float sg = bf16_at(gs[g >> 1], g), bg = bf16_at(gb[g >> 1], g);
      const float su = bf16_at(us[g >> 1], g), bu = bf16_at(ub[g >> 1], g);
      const uint wg = gw[row * words + j], wu = uw[row * words + j];
      float dg[CODES], du[CODES];
      [[unroll]] for (uint n = 0u; n < CODES; ++n) {
        dg[n] = fma(float((wg >> (BITS * n)) & MASK), sg, bg);
        du[n] = fma(float((wu >> (BITS * n)) & MASK), su, bu);
      }
      [[unroll]] for (uint t = 0u; t < TILE_T; ++t) {
        if (t < nt) {
          const uint xi = xbase[t] + j * (CODES / 4u);
          [[unroll]] for (uint v = 0u; v < CODES / 4u; ++v) {
            const vec4 a = x4[xi + v];
            ag[t] += dg[4u * v] * a.x + dg[4u * v + 1u] * a.y + dg[4u * v + 2u] * a.z + dg[4u * v + 3u] * a.w;
            au[t] += du[4u * v] * a.x + du[4u * v + 1u] * a.y + du[4u * v + 2u] * a.z + du[4u * v + 3u] * a.w;
          }
        }
      }
    }
    [[unroll]] for (uint t = 0u; t < TILE_T; ++t) {
      if (t < nt) {
        const float g = subgroupAdd(ag[t]), u = subgroupAdd(au[t]);
        if (subgroupElect()) act[(r0 + t) * pc.inter + i] = g / (1.0 + exp(-g)) * u;
      }
    }
  }
}
