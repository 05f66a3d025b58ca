#include "ops/expert_buckets.h"

namespace moe {

// Counting sort, O(T K + E): histogram per expert, prefix sum over the non-empty experts, then
// one scan t = 0..T-1, k = 0..K-1 dropping each row at its expert's cursor (which keeps
// tokens ascending inside a bucket).
void expert_buckets_fast(const ExpertBucketsParams& p, std::span<const int32_t> idx, std::span<const float> w,
                         ExpertBuckets& out) {
  expert_buckets_validate(p, idx, w);
  const int64_t rows = p.tokens * p.k;
  std::vector<uint32_t> count(p.experts, 0);
  for (int64_t r = 0; r < rows; ++r) ++count[idx[r]];
  out.expert_ids.clear();
  out.offsets.assign(1, 0);
  std::vector<uint32_t> cursor(p.experts, 0);
  for (int64_t e = 0; e < p.experts; ++e) {
    if (count[e] == 0) continue;
    cursor[e] = out.offsets.back();
    out.expert_ids.push_back(int32_t(e));
    out.offsets.push_back(out.offsets.back() + count[e]);
  }
  out.token_idx.resize(rows);
  out.weights.resize(rows);
  for (int64_t r = 0; r < rows; ++r) {
    const uint32_t dst = cursor[idx[r]]++;
    out.token_idx[dst] = int32_t(r / p.k);
    out.weights[dst] = w[r];
  }
}

}  // namespace moe
