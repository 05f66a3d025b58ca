#include <cmath>
#include <string>
#include <vector>

#include "core/math.h"
#include "ops/moe_permute_fuse.h"
#include "ops/swiglu_expert.h"

namespace moe {

void moe_permute_fuse_validate(const MoePermuteFuseParams& p, const ExpertBuckets& b,
                               std::span<const ExpertWeights> experts, std::span<const float> x,
                               std::span<float> out) {
  MOE_CHECK(p.tokens >= 0 && p.hidden > 0 && p.inter > 0 && p.experts > 0,
            "moe_permute_fuse: tokens=" << p.tokens << " hidden=" << p.hidden << " inter=" << p.inter
                                        << " experts=" << p.experts
                                        << ", expected tokens >= 0 and hidden, inter, experts > 0");
  check_size(experts, p.experts, "moe_permute_fuse", "experts");
  check_size(x, p.tokens * p.hidden, "moe_permute_fuse", "x");
  check_size(out, p.tokens * p.hidden, "moe_permute_fuse", "out");
  // out is accumulated while x is still read by later rows: they must not share memory.
  const float *x0 = x.data(), *x1 = x.data() + x.size(), *o0 = out.data(), *o1 = out.data() + out.size();
  MOE_CHECK(x.empty() || out.empty() || o1 <= x0 || x1 <= o0, "moe_permute_fuse: out overlaps x, expected separate buffers");
  validate_expert_buckets(b, p.tokens, p.experts, "moe_permute_fuse");
  const SwigluExpertParams sp{1, p.hidden, p.inter, p.bits};
  for (int32_t id : b.expert_ids)
    swiglu_expert_validate_weights(sp, experts[id], "moe_permute_fuse", "experts[" + std::to_string(id) + "].");
}

template <class Acc>
void moe_permute_fuse_ref(const MoePermuteFuseParams& p, const ExpertBuckets& b,
                          std::span<const ExpertWeights> experts, std::span<const float> x, std::span<float> out) {
  moe_permute_fuse_validate(p, b, experts, x, out);
  const int64_t d = p.hidden;
  // The running sums in Acc: f32 is the engines' in-place accumulation, f64 rounds once at the end.
  std::vector<Acc> acc(out.begin(), out.end());
  std::vector<float> e(d);
  for (size_t bi = 0; bi < b.expert_ids.size(); ++bi) {
    const ExpertWeights& ew = experts[b.expert_ids[bi]];
    for (uint32_t r = b.offsets[bi]; r < b.offsets[bi + 1]; ++r) {
      const int64_t t = b.token_idx[r];
      swiglu_expert_ref<Acc>({1, d, p.inter, p.bits}, ew, x.subspan(t * d, d), e);
      const Acc w = b.weights[r];
      for (int64_t i = 0; i < d; ++i) acc[t * d + i] = std::fma(Acc(e[i]), w, acc[t * d + i]);
    }
  }
  for (size_t i = 0; i < out.size(); ++i) out[i] = float(acc[i]);
}

template void moe_permute_fuse_ref<float>(const MoePermuteFuseParams&, const ExpertBuckets&,
                                          std::span<const ExpertWeights>, std::span<const float>, std::span<float>);
template void moe_permute_fuse_ref<double>(const MoePermuteFuseParams&, const ExpertBuckets&,
                                           std::span<const ExpertWeights>, std::span<const float>, std::span<float>);

}  // namespace moe
