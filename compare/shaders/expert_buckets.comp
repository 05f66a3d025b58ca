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
// over the experts (a contiguous run of experts per lane, then a Hillis-Steele scan of the WG
// run totals); (3) rows placed in row order (t, then slot), WG consecutive rows per chunk: a
// row's place is its expert's cursor plus the number of earlier rows of the chunk with the same
// expert (a token's experts are distinct, so these are earlier tokens); the cursors advance
// after each chunk. No subgroup operations: any subgroup size, any k. Limits: experts <= 4096
// (the shared counts), tokens * k <= 16384 (each lane's loop trip count, about tokens * k + WG
// in phase 3, stays far below lavapipe's 65535).
// Workgroup: WG = min(256, invocations the device allows at the subgroup size), spec id 10.
layout(local_size_x = 256, local_size_x_id = 10) in;
layout(std430, set = 0, binding = 0) readonly buffer Idx { int idx[]; };
layout(std430, set = 0, binding = 1) readonly buffer Wt { float w[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Off { uint offsets[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Tok { int token_idx[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Wo { float weights[]; };
layout(push_constant) uniform Push { uint tokens; uint k; uint experts; } pc;
const uint WG = gl_WorkGroupSize.x;
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

  // Placement, WG rows per chunk, in row order.
  for (uint r0 = 0u; r0 < rows; r0 += WG) {
    const uint r = r0 + l;
    const bool live = r < rows;
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
