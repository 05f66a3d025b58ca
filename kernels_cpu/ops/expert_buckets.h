// expert_buckets: CSR buckets of routed rows per expert (docs/ops/moe.md "Bucketed MoE", MFR
// build_expert_buckets), the input of moe_permute_fuse.
//
// Shape contract:
//   idx [T, K] int32   routed expert ids per token and slot (router output), each in [0, E),
//                      distinct within a token's row (top-K experts are distinct)
//   w   [T, K] f32     routing weights, same layout
//   out ExpertBuckets  (below), overwritten. B = number of distinct experts routed to.
// Semantics: expert_ids = the experts chosen by >= 1 token, ascending; bucket b owns rows
// [offsets[b], offsets[b+1]); rows are filled by scanning t = 0..T-1, then slot k = 0..K-1,
// so inside a bucket tokens ascend; offsets[B] = T*K and every (t, k) is exactly one row.
// The op is exact data movement: Acc is unused and all tiers give identical results (the
// reference scans once per expert, the fast tier is a counting sort).
#pragma once
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace moe {

// One bucket per expert chosen by at least one token, experts ascending. Bucket b owns rows
// [offsets[b], offsets[b+1]); within a bucket rows are in ascending token order; a token
// appears at most once per bucket.
struct ExpertBuckets {
  std::vector<int32_t> expert_ids;  // [B] ascending
  std::vector<uint32_t> offsets;    // [B + 1], offsets[0] = 0, offsets[B] = rows
  std::vector<int32_t> token_idx;   // [rows] destination token of each row
  std::vector<float> weights;       // [rows] routing weight of each row
};

struct ExpertBucketsParams {
  int64_t tokens = 1;
  int64_t k = 0;        // K slots per token
  int64_t experts = 0;  // E
  template <class F>
  void visit(F&& f) const {
    f("tokens", tokens), f("k", k), f("experts", experts);
  }
};

template <class Acc>
void expert_buckets_ref(const ExpertBucketsParams& p, std::span<const int32_t> idx, std::span<const float> w,
                        ExpertBuckets& out);
void expert_buckets_fast(const ExpertBucketsParams& p, std::span<const int32_t> idx, std::span<const float> w,
                         ExpertBuckets& out);

// Routing validation: sizes, ids in [0, E), no expert twice in a token's row.
void expert_buckets_validate(const ExpertBucketsParams& p, std::span<const int32_t> idx, std::span<const float> w);

// Structural validation of a bucket set over `tokens` tokens and `experts` experts, for its
// consumers (`op` names the caller): offsets[0] = 0, every bucket non-empty (offsets strictly
// increasing), offsets[B] = token_idx.size() = weights.size(), expert ids strictly ascending in
// [0, E), tokens in [0, T) and strictly ascending inside each bucket.
void validate_expert_buckets(const ExpertBuckets& b, int64_t tokens, int64_t experts, std::string_view op);

}  // namespace moe
