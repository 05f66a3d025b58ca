#include <limits>

#include "core/math.h"
#include "ops/expert_buckets.h"

namespace moe {

void expert_buckets_validate(const ExpertBucketsParams& p, std::span<const int32_t> idx, std::span<const float> w) {
  MOE_CHECK(p.tokens >= 0 && p.k > 0 && p.experts > 0 && p.k <= p.experts,
            "expert_buckets: tokens=" << p.tokens << " k=" << p.k << " experts=" << p.experts
                                      << ", expected tokens >= 0 and 0 < k <= experts");
  // Offsets are u32 and ids i32 (the MFR layout).
  MOE_CHECK(p.tokens * p.k <= int64_t(std::numeric_limits<uint32_t>::max()) &&
                p.experts <= int64_t(std::numeric_limits<int32_t>::max()),
            "expert_buckets: tokens*k=" << p.tokens * p.k << " experts=" << p.experts
                                        << ", expected rows < 2^32 and experts < 2^31");
  check_size(idx, p.tokens * p.k, "expert_buckets", "idx");
  check_size(w, p.tokens * p.k, "expert_buckets", "w");
  for (int64_t t = 0; t < p.tokens; ++t) {
    for (int64_t k = 0; k < p.k; ++k) {
      const int32_t e = idx[t * p.k + k];
      MOE_CHECK(e >= 0 && e < p.experts, "expert_buckets: idx[" << t << "][" << k << "] = " << e
                                                                << " out of range [0, " << p.experts << ")");
      for (int64_t j = 0; j < k; ++j)
        MOE_CHECK(idx[t * p.k + j] != e, "expert_buckets: token " << t << " routes to expert " << e
                                                                  << " twice (slots " << j << " and " << k
                                                                  << "), expected distinct experts");
    }
  }
}

void validate_expert_buckets(const ExpertBuckets& b, int64_t tokens, int64_t experts, std::string_view op) {
  const size_t B = b.expert_ids.size();
  MOE_CHECK(b.offsets.size() == B + 1,
            op << ": buckets have " << B << " expert ids and " << b.offsets.size() << " offsets, expected " << B + 1);
  MOE_CHECK(b.offsets[0] == 0, op << ": buckets offsets[0] = " << b.offsets[0] << ", expected 0");
  MOE_CHECK(b.token_idx.size() == b.offsets[B] && b.weights.size() == b.offsets[B],
            op << ": buckets offsets[" << B << "] = " << b.offsets[B] << " but token_idx has " << b.token_idx.size()
               << " rows and weights " << b.weights.size() << ", expected all equal");
  for (size_t i = 0; i < B; ++i) {
    MOE_CHECK(b.offsets[i + 1] > b.offsets[i], op << ": bucket " << i << " (expert " << b.expert_ids[i]
                                                  << ") has offsets " << b.offsets[i] << ".." << b.offsets[i + 1]
                                                  << ", expected a non-empty, increasing range");
    const int32_t e = b.expert_ids[i];
    MOE_CHECK(e >= 0 && e < experts, op << ": bucket " << i << " expert id " << e << " out of range [0, " << experts << ")");
    MOE_CHECK(i == 0 || e > b.expert_ids[i - 1], op << ": bucket " << i << " expert id " << e << " after "
                                                    << b.expert_ids[i - 1] << ", expected strictly ascending ids");
  }
  // Rows only once every range is known to be increasing and inside token_idx.
  for (size_t i = 0; i < B; ++i) {
    for (uint32_t r = b.offsets[i]; r < b.offsets[i + 1]; ++r) {
      const int32_t t = b.token_idx[r];
      MOE_CHECK(t >= 0 && t < tokens, op << ": row " << r << " token " << t << " out of range [0, " << tokens << ")");
      MOE_CHECK(r == b.offsets[i] || t > b.token_idx[r - 1],
                op << ": row " << r << " of bucket " << i << " has token " << t << " after " << b.token_idx[r - 1]
                   << ", expected strictly ascending tokens inside a bucket");
    }
  }
}

// One pass over the routing per expert id: obviously correct, O(E T K).
template <class Acc>
void expert_buckets_ref(const ExpertBucketsParams& p, std::span<const int32_t> idx, std::span<const float> w,
                        ExpertBuckets& out) {
  expert_buckets_validate(p, idx, w);
  out = ExpertBuckets{};
  out.offsets.push_back(0);
  for (int32_t e = 0; e < p.experts; ++e) {
    const size_t before = out.token_idx.size();
    for (int64_t t = 0; t < p.tokens; ++t)
      for (int64_t k = 0; k < p.k; ++k)
        if (idx[t * p.k + k] == e) {
          out.token_idx.push_back(int32_t(t));
          out.weights.push_back(w[t * p.k + k]);
        }
    if (out.token_idx.size() > before) {
      out.expert_ids.push_back(e);
      out.offsets.push_back(uint32_t(out.token_idx.size()));
    }
  }
}

template void expert_buckets_ref<float>(const ExpertBucketsParams&, std::span<const int32_t>, std::span<const float>,
                                        ExpertBuckets&);
template void expert_buckets_ref<double>(const ExpertBucketsParams&, std::span<const int32_t>, std::span<const float>,
                                         ExpertBuckets&);

}  // namespace moe
