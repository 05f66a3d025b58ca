// moe_permute_fuse: the bucketed routed-expert sum of multi-token prefill (docs/ops/moe.md "Bucketed MoE",
// MFR Op::MoeBatchedPermuteFuse / moe_permute_fuse_cpu; docs/ops/verification.md "Routed-sum order").
//
// Shape contract (T tokens, d = hidden, I = inter, E = experts):
//   b        ExpertBuckets from expert_buckets (validated: see validate_expert_buckets)
//   experts  [E] ExpertWeights indexed by expert id; only the ids in b.expert_ids are read and
//            must hold gate/up [I, d], down [d, I] with bits = p.bits (the others may be empty)
//   x        [T, d] f32 (h_post per token; the bucket gather is done here)
//   out      [T, d] f32, in/out: accumulated into (zeroed or pre-seeded by the caller); must
//            not overlap x
//   For bucket b ascending (expert ids ascending), rows r ascending:
//     e = swiglu_expert(experts[expert_ids[b]], x[token_idx[r]])      ([d], stored as f32)
//     out[t][i] = fma(e[i], weights[r], out[t][i]),  t = token_idx[r]
//   so each token's routed sum is accumulated in ascending expert-id order, not in router slot
//   order: it equals the per-token path sum_k w_k expert_k(x_t) up to summation order.
// f32 tier: swiglu_expert_ref<float> per row and the f32 fma above (MFR's order). f64 tier:
// swiglu_expert_ref<double> per row (e stored as f32 like the engines), the accumulation in f64
// from the f32 out, rounded once at the end. Fast tier: per bucket, the bucket's rows gathered
// into a [rows, d] matrix and swiglu_expert_fast over it, then the same scatter.
#pragma once
#include <cstdint>
#include <span>

#include "core/expert_blob.h"
#include "ops/expert_buckets.h"

namespace moe {

struct MoePermuteFuseParams {
  int64_t tokens = 1;
  int64_t hidden = 0;   // d
  int64_t inter = 0;    // I
  int bits = 4;
  int64_t experts = 0;  // E
  template <class F>
  void visit(F&& f) const {
    f("tokens", tokens), f("hidden", hidden), f("inter", inter), f("bits", bits), f("experts", experts);
  }
};

template <class Acc>
void moe_permute_fuse_ref(const MoePermuteFuseParams& p, const ExpertBuckets& b,
                          std::span<const ExpertWeights> experts, std::span<const float> x, std::span<float> out);
void moe_permute_fuse_fast(const MoePermuteFuseParams& p, const ExpertBuckets& b,
                           std::span<const ExpertWeights> experts, std::span<const float> x, std::span<float> out);

void moe_permute_fuse_validate(const MoePermuteFuseParams& p, const ExpertBuckets& b,
                               std::span<const ExpertWeights> experts, std::span<const float> x,
                               std::span<float> out);

}  // namespace moe
