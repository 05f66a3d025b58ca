// expert_buckets: CSR buckets of routed rows per expert (spec/ops.md §8.5, MFR ExpertBuckets).
// (Struct defined up front; the op itself is implemented in expert_buckets_*.cpp.)
#pragma once
#include <cstdint>
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

}  // namespace moe
