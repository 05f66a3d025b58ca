#version 450
// permute_down_scatter (stage 2 of moe_permute_fuse, compare/manifest/chains.h):
//   out[t][i] = out_in[t][i] + sum over t's rows r (ascending r) of weights[r] * (down_b[i] . act[r])
// b = the bucket owning r. out is in/out: pre-seeded by the caller (zeros or the residual).
// Layout as permute_gate_up.comp: bucket_offsets [B + 1] u32, token_idx [rows] i32, weights
// [rows] f32 (the CPU op's row order), down.w [B, hidden, inter * BITS / 32] u32, down.scales,
// .biases [B, hidden, inter / G] bf16 pairs (bucket b's matrix starts at row b * hidden),
// act [rows, inter] f32, out [tokens, hidden] f32.
// Deterministic, race-free, no float atomics: workgroup (x, y) owns out[y][x * ROWS_PER_WG ..)
// alone. (1) its lanes scan token_idx (rows <= tokens * k, a few iterations per lane) and list
// token y's rows in shared memory; a token has one row per chosen expert, so <= k <= MAX_K;
// (2) the list is put in ascending row order (rank sort; the scan's appends race only on the
// order, not the set), so the sum order is fixed; (3) per down row, a subgroup takes the dot
// with each listed row's act (lanes stride over the words: coalesced, one subgroupAdd) and
// accumulates w * dot; the out element is read and written by one lane.
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x = 128) in;
layout(constant_id = 0) const uint ROWS_PER_WG = 4;
layout(constant_id = 1) const uint BITS = 4;
const uint CODES = 32u / BITS;
const uint MASK = (1u << BITS) - 1u;
const uint WG = 128u;
const uint MAX_K = 64u;
layout(std430, set = 0, binding = 0) readonly buffer Dw { uint dw[]; };
layout(std430, set = 0, binding = 1) readonly buffer Ds { uint ds[]; };
layout(std430, set = 0, binding = 2) readonly buffer Db { uint db[]; };
layout(std430, set = 0, binding = 3) readonly buffer Act { vec4 act4[]; };  // inter % 4 == 0
layout(std430, set = 0, binding = 4) readonly buffer Off { uint bucket_offsets[]; };
layout(std430, set = 0, binding = 5) readonly buffer Tok { int token_idx[]; };
layout(std430, set = 0, binding = 6) readonly buffer Wt { float weights[]; };
layout(std430, set = 0, binding = 7) buffer Out { float out_[]; };
layout(push_constant) uniform Push { uint hidden; uint inter; uint rows; uint buckets; uint group_size; } pc;
shared uint found_n;
shared uint found[MAX_K];   // token y's rows, in scan order
shared uint sorted_r[MAX_K];  // ... ascending
shared uint sorted_b[MAX_K];  // ... and their buckets

float bf16_at(uint word, uint i) { return uintBitsToFloat((i & 1u) == 0u ? word << 16 : word & 0xFFFF0000u); }

void main() {
  const uint l = gl_LocalInvocationID.x, t = gl_WorkGroupID.y;
  if (l == 0u) found_n = 0u;
  barrier();
  for (uint r = l; r < pc.rows; r += WG)
    if (uint(token_idx[r]) + 1u == t) {  // PLANTED: token_idx off by one
      const uint n = atomicAdd(found_n, 1u);
      if (n < MAX_K) found[n] = r;
    }
  barrier();
  const uint n = min(found_n, MAX_K);
  if (l < n) {
    const uint r = found[l];
    uint rank = 0u;
    for (uint j = 0u; j < n; ++j) rank += found[j] < r ? 1u : 0u;
    uint b = 0u;  // the bucket of r: the last b with bucket_offsets[b] <= r (binary search)
    uint hi = pc.buckets;
    while (b + 1u < hi) {
      const uint mid = (b + hi) / 2u;
      if (bucket_offsets[mid] <= r) b = mid; else hi = mid;
    }
    sorted_r[rank] = r, sorted_b[rank] = b;
  }
  barrier();

  const uint words = pc.inter / CODES, groups = pc.inter / pc.group_size, wpg = pc.group_size / CODES;
  const uint arow = pc.inter / 4u;
  for (uint k = gl_SubgroupID; k < ROWS_PER_WG; k += gl_NumSubgroups) {
    const uint i = gl_WorkGroupID.x * ROWS_PER_WG + k;
    if (i >= pc.hidden) break;  // uniform within the subgroup
    float acc = 0.0;  // sum of w * dot over the token's rows, the same value in every lane
    for (uint m = 0u; m < n; ++m) {
      const uint r = sorted_r[m], row = sorted_b[m] * pc.hidden + i;
      float a = 0.0;
      for (uint j = gl_SubgroupInvocationID; j < words; j += gl_SubgroupSize) {
        const uint g = row * groups + j / wpg;
        const float s = bf16_at(ds[g >> 1], g), bb = bf16_at(db[g >> 1], g);
        const uint w = dw[row * words + j];
        const uint ai = r * arow + j * (CODES / 4u);
        [[unroll]] for (uint v = 0u; v < CODES / 4u; ++v) {
          const vec4 x = act4[ai + v];
          a += fma(float((w >> (BITS * (4u * v))) & MASK), s, bb) * x.x +
               fma(float((w >> (BITS * (4u * v + 1u))) & MASK), s, bb) * x.y +
               fma(float((w >> (BITS * (4u * v + 2u))) & MASK), s, bb) * x.z +
               fma(float((w >> (BITS * (4u * v + 3u))) & MASK), s, bb) * x.w;
        }
      }
      acc = fma(weights[r], subgroupAdd(a), acc);
    }
    if (subgroupElect()) out_[t * pc.hidden + i] += acc;
  }
}
