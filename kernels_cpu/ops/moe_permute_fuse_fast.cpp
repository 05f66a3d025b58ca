#include <algorithm>
#include <vector>

#include "ops/moe_permute_fuse.h"
#include "ops/swiglu_expert.h"

namespace moe {

// Per bucket: gather the bucket's token rows into one [rows, d] block, run the expert over the
// block (swiglu_expert_fast: threaded matvec_q_fast per row; a quantized matmul over the rows
// would slot in here once matmul_q is available), then scatter with the routing weights.
// Buckets stay sequential so the scatter needs no atomics (a token is in many buckets).
void moe_permute_fuse_fast(const MoePermuteFuseParams& p, const ExpertBuckets& b,
                           std::span<const ExpertWeights> experts, std::span<const float> x, std::span<float> out) {
  moe_permute_fuse_validate(p, b, experts, x, out);
  const int64_t d = p.hidden;
  std::vector<float> xb, eb;
  for (size_t bi = 0; bi < b.expert_ids.size(); ++bi) {
    const int64_t r0 = b.offsets[bi], rows = int64_t(b.offsets[bi + 1]) - r0;
    xb.resize(rows * d), eb.resize(rows * d);
    for (int64_t r = 0; r < rows; ++r) {
      const float* src = x.data() + int64_t(b.token_idx[r0 + r]) * d;
      std::copy(src, src + d, xb.begin() + r * d);
    }
    swiglu_expert_fast({rows, d, p.inter, p.bits}, experts[b.expert_ids[bi]], xb, eb);
    for (int64_t r = 0; r < rows; ++r) {
      const float w = b.weights[r0 + r];
      const float* er = eb.data() + r * d;
      float* o = out.data() + int64_t(b.token_idx[r0 + r]) * d;
      for (int64_t i = 0; i < d; ++i) o[i] += er[i] * w;
    }
  }
}

}  // namespace moe
