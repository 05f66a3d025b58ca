#version 450
// expert_buckets: CSR buckets of routed rows per expert (kernels_cpu/ops/expert_buckets.h),
// in a dense GPU layout with fixed-size outputs:
//   idx [tokens, k] i32 (distinct experts per token, each in [0, experts)), w [tokens, k] f32
//   offsets   [experts + 1] u32  offsets[e] = number of rows routed to experts < e, over ALL
//             experts (an expert nobody chose has offsets[e] == offsets[e + 1]);
//             offsets[experts] = tokens * k
//   token_idx [tokens * k] i32   rows of expert e at [offsets[e], offsets[e + 1]), tokens
//   weights   [tokens * k] f32   ascending inside a bucket: exactly the CPU op's row order
//             (its expert_ids are the e with a non-empty range), weights copied bit for bit.
// Deterministic without ordered atomics: one workgroup; (1) per-expert counts in shared memory
// (atomic increments: the totals do not depend on their order); (2) an exclusive prefix sum
// over the experts (a contiguous run of experts per lane, then a Hillis-Steele scan of the 256
// run totals); (3) rows placed chunk by chunk in row order (t, then slot): a row's place is its
// expert's cursor plus the number of earlier rows of the chunk with the same expert (a token's
// experts are distinct, so these are earlier tokens); the cursors advance after each chunk.
// No subgroup operations: any subgroup size. Limits: experts <= 4096 (the shared counts),
// k <= 256 (a chunk holds whole tokens), tokens * k <= 16384 (each lane's loop trip count, at
// most 2 tokens * k in phase 3, stays far below lavapipe's 65535).
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) readonly buffer Idx { int idx[]; };
layout(std430, set = 0, binding = 1) readonly buffer Wt { float w[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Off { uint offsets[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Tok { int token_idx[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Wo { float weights[]; };
layout(push_constant) uniform Push { uint tokens; uint k; uint experts; } pc;
const uint WG = 256u;
const uint MAX_EXPERTS = 4096u;
shared uint cursor[MAX_EXPERTS];  // counts, then each expert's next free row
shared uint part[WG];
shared uint chunk_e[WG];

void main() {
  const uint l = gl_LocalInvocationID.x;
  const uint rows = pc.tokens * pc.k;
  for (uint e = l; e < pc.experts; e += WG) cursor[e] = 0u;
  barrier();
  for (uint r = l; r < rows; r += WG) atomicAdd(cursor[uint(idx[r])], 1u);
  barrier();

  // Exclusive prefix sum: lane l owns experts [l * run, (l + 1) * run).
  const uint run = (pc.experts + WG - 1u) / WG;
  const uint e0 = min(l * run, pc.experts), e1 = min(e0 + run, pc.experts);
  uint own = 0u;
  for (uint e = e0; e < e1; ++e) own += cursor[e];
  part[l] = own;
  barrier();
  for (uint d = 1u; d < WG; d <<= 1) {
    const uint add = l >= d ? part[l - d] : 0u;
    barrier();
    part[l] += add;
    barrier();
  }
  uint off = part[l] - own;
  for (uint e = e0; e < e1; ++e) {
    const uint c = cursor[e];
    cursor[e] = off;
    offsets[e] = off;
    off += c;
  }
  if (l == 0u) offsets[pc.experts] = rows;
  barrier();

  // Placement, whole tokens per chunk, in row order.
  const uint chunk_tokens = WG / pc.k, chunk_rows = chunk_tokens * pc.k;
  for (uint t0 = 0u; t0 < pc.tokens; t0 += chunk_tokens) {
    const uint r = t0 * pc.k + l;
    const bool live = l < chunk_rows && r < rows;
    const uint e = live ? uint(idx[r]) : 0xFFFFFFFFu;
    chunk_e[l] = e;
    barrier();
    if (live) {
      uint rank = 0u;
      for (uint j = 0u; j < l; ++j) rank += chunk_e[j] == e ? 1u : 0u;
      const uint dest = cursor[e] + rank;
      token_idx[dest] = int(r / pc.k);
      weights[dest] = w[r];
    }
    barrier();
    if (live) atomicAdd(cursor[e], 1u);
    barrier();
  }
}
