#version 450
// permute_down_scatter (stage 2 of moe_permute_fuse, compare/manifest/chains.h):
//   out[t][i] = out_in[t][i] + sum over t's rows r (ascending r) of weights[r] * (down_b[i] . act[r])
// b = the bucket owning r. out is in/out: pre-seeded by the caller (zeros or the residual).
// Layout as permute_gate_up.comp: bucket_offsets [B + 1] u32, token_idx [rows] i32, weights
// [rows] f32 (the CPU op's row order), down.w [B, hidden, inter * BITS / 32] u32, down.scales,
// .biases [B, hidden, inter / G] bf16 pairs (bucket b's matrix starts at row b * hidden; G a
// multiple of 128 / BITS: a quad, 4 words, lies inside one group), act [rows, inter] f32, out
// [tokens, hidden] f32.
// Deterministic, race-free, no float atomics: workgroup (x, y) owns out[y][x * R .. x * R + R)
// alone (R, spec id 0, divides hidden: the manifest). (1) its lanes scan token_idx (rows <= k
// tokens, a few iterations per lane) and list token y's rows in shared memory; a token has one row
// per chosen expert, so <= k <= MAX_K; (2) the list is put in ascending row order (rank sort, lane
// m ranks entry m: WG >= k, the manifest; the scan's appends race only on the order, not the set),
// so the sum order is fixed; (3) the lanes form G = WG / P slots of P lanes (P, spec id 2): per
// chunk of G listed rows slot s takes listed row c + s, its lanes stride over that row's quads of
// the R down rows, U quads per lane per step (spec id 3), and keep one partial dot per down row;
// (4) the partials go through shared memory, a slot's P summed in a fixed order into
// dots[row][listed] by one lane per (down row, slot) (R <= P, the manifest: R G <= WG); (5) lane r < R
// accumulates fma(weights[row], dot, acc) over the listed rows in ascending order, and alone reads
// and writes its out element.
// Why: a down row is short (inter * BITS / 8 bytes: 256 at A3B's inter 512), so a subgroup per row
// left its lanes a word or two each and its K rows one after another; here a lane loads 16 bytes of
// weights with one scale and bias, every load of a step (R U quads, their scales and biases) before
// any arithmetic, and G of the token's rows at once. The manifest: U 1, P = a row's quads (at least
// 4, at most WG / 2), R 8 where P >= 8 and 8 divides hidden (A3B decode: P 16, G 8 = K; A17B: P 32,
// G 4, three chunks of K 10). A lane's act (4 XPW vec4 per quad) serves R down rows: R 8 reads act
// half as often as R 4; R 16 / 32 leave too few workgroups and U 2-4 were slower ("The decode chain
// retuned" in records/benchmarks-history.md). No int->float conversion
// (code() as permute_gate_up.comp); each term is fma(q, s, b) * act, the reference's. Loads past
// a row's end are clamped (last quad) and their terms skipped. No subgroup operations: any subgroup size.
// Workgroup: WG = min(128, invocations the device allows at the subgroup size), spec id 10.
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x = 128, local_size_x_id = 10) in;
const uint WG = gl_WorkGroupSize.x;
layout(constant_id = 0) const uint R = 4;
layout(constant_id = 1) const uint BITS = 4;
layout(constant_id = 2) const uint P = 32;
layout(constant_id = 3) const uint U = 1;
const uint G = WG / P;         // slots: listed rows per chunk
const uint CPW = 32u / BITS;   // codes per word
const uint HALF = 16u / BITS;  // codes per 16-bit half
const uint CPQ = 4u * CPW;     // codes per quad
const uint XPW = CPW / 4u;     // vec4 of act per word
const uint MASK = (1u << BITS) - 1u;
const uint MAX_K = 64u;
const uint DS = MAX_K + G;     // dots per down row: a chunk's slots past the list land in [n, n + G)
layout(std430, set = 0, binding = 0) readonly buffer Dw { uvec4 dw[]; };  // whole quads per row
layout(std430, set = 0, binding = 1) readonly buffer Ds { uint ds[]; };
layout(std430, set = 0, binding = 2) readonly buffer Db { uint db[]; };
layout(std430, set = 0, binding = 3) readonly buffer Act { vec4 act4[]; };  // inter % 4 == 0
layout(std430, set = 0, binding = 4) readonly buffer Off { uint bucket_offsets[]; };
layout(std430, set = 0, binding = 5) readonly buffer Tok { int token_idx[]; };
layout(std430, set = 0, binding = 6) readonly buffer Wt { float weights[]; };
layout(std430, set = 0, binding = 7) buffer Out { float out_[]; };
layout(push_constant) uniform Push { uint hidden; uint inter; uint rows; uint buckets; uint group_size; } pc;
shared uint found_n;
shared uint found[MAX_K];     // token y's rows, in scan order
shared uint sorted_r[MAX_K];  // ... ascending
shared uint sorted_b[MAX_K];  // ... and their buckets
shared float part[R * WG];    // [down row][lane]: a chunk's partial dots
shared float dots[R * DS];    // [down row][listed row]

float bf16_at(uint word, uint i) { return uintBitsToFloat((i & 1u) == 0u ? word << 16 : word & 0xFFFF0000u); }
// Code n (0 .. CPW - 1) of word w as an exact float (permute_gate_up.comp).
float code(uint w, uint n) {
  const uint h = n < HALF ? w : w >> 16, p = n % HALF;
  const uint e = (150u - BITS * p) << 23;  // 2^(23 - BITS p): code p's lowest bit weighs 1
  return uintBitsToFloat((h & (MASK << (BITS * p))) | e) - uintBitsToFloat(e);
}

// Steps (1) and (2): token t's rows into sorted_r / sorted_b, ascending; returns how many.
uint list_rows(uint l, uint t) {
  if (l == 0u) found_n = 0u;
  barrier();
  for (uint r = l; r < pc.rows; r += WG)
    if (uint(token_idx[r]) == t) {
      const uint n = atomicAdd(found_n, 1u);
      if (n < MAX_K) found[n] = r;
    }
  barrier();
  const uint n = min(found_n, MAX_K);
  if (l < n) {  // WG >= k >= n (the manifest)
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
  return n;
}

void main() {
  const uint l = gl_LocalInvocationID.x, t = gl_WorkGroupID.y;
  const uint n = list_rows(l, t);
  const uint quads = pc.inter / CPQ, groups = pc.inter / pc.group_size, qpg = pc.group_size / CPQ;
  const uint i0 = gl_WorkGroupID.x * R, slot = l / P, lane = l % P;
  for (uint c = 0u; c < n; c += G) {  // uniform: n is read from shared memory after a barrier
    float a[R];
    [[unroll]] for (uint r = 0u; r < R; ++r) a[r] = 0.0;
    const uint m = c + slot;
    if (m < n) {  // lanes past the list (or the last slot's spare lanes, l >= G P) hold zeros
      const uint row0 = sorted_b[m] * pc.hidden + i0, ai = sorted_r[m] * (pc.inter / 4u);
      for (uint base = 0u; base < quads; base += U * P) {
        uvec4 w[U * R];
        float s[U * R], bb[U * R];
        [[unroll]] for (uint u = 0u; u < U; ++u) {
          const uint j = min(base + u * P + lane, quads - 1u);
          [[unroll]] for (uint r = 0u; r < R; ++r) {
            const uint row = row0 + r, g = row * groups + j / qpg;
            w[u * R + r] = dw[row * quads + j];
            s[u * R + r] = bf16_at(ds[g >> 1], g), bb[u * R + r] = bf16_at(db[g >> 1], g);
          }
        }
        [[unroll]] for (uint u = 0u; u < U; ++u) {
          const uint j = base + u * P + lane;
          if (j >= quads) break;
          [[unroll]] for (uint k = 0u; k < 4u; ++k) {  // word k of the quad: act vec4s j CPW + k XPW ..
            [[unroll]] for (uint v = 0u; v < XPW; ++v) {
              const vec4 x = act4[ai + j * CPW + k * XPW + v];
              [[unroll]] for (uint r = 0u; r < R; ++r) {
                const uint i = u * R + r;
                [[unroll]] for (uint e = 0u; e < 4u; ++e) a[r] += fma(code(w[i][k], 4u * v + e), s[i], bb[i]) * x[e];
              }
            }
          }
        }
      }
    }
    [[unroll]] for (uint r = 0u; r < R; ++r) part[r * WG + l] = a[r];
    barrier();
    if (l < R * G) {  // lane l sums (down row, slot) = (l / G, l % G): R G <= WG (the manifest)
      const uint r = l / G, g = l % G;
      float d = 0.0;
      for (uint p = 0u; p < P; ++p) d += part[r * WG + g * P + p];
      dots[r * DS + c + g] = d;  // c + g < n + G <= DS
    }
    barrier();
  }
  if (l < R) {  // WG >= R (the manifest)
    float acc = 0.0;
    for (uint m = 0u; m < n; ++m) acc = fma(weights[sorted_r[m]], dots[l * DS + m], acc);
    out_[t * pc.hidden + i0 + l] += acc;
  }
}
