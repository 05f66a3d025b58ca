#include <algorithm>
#include <cmath>
#include <numeric>

#include "ops/router_noaux.h"

namespace moe {

// Per token: libm expf per element (scalar, so equal logits give bit-equal scores and the
// tie rules hold), group top-2 in one pass, group and expert selection by std::partial_sort
// over (value desc, index asc), the expert selection over the kept groups' experts only.
// Tokens are spread over threads when there is enough work (prefill).
void router_noaux_fast(const RouterNoauxParams& p, std::span<const float> logits, std::span<const float> bias,
                       std::span<int32_t> idx, std::span<float> w) {
  router_noaux_validate(p, logits, bias, idx, w);
  const int64_t E = p.experts, K = p.k, n_group = p.n_group, group_size = E / n_group, TG = p.topk_group;
#pragma omp parallel if (p.tokens * E >= (1 << 14))
  {
    std::vector<float> s(E), c(E), group_score(n_group);
    std::vector<int32_t> groups(n_group), cand(TG * group_size);
#pragma omp for schedule(static)
    for (int64_t t = 0; t < p.tokens; ++t) {
      int32_t* it = idx.data() + t * K;
      float* wt = w.data() + t * K;
      if (!router::noaux_scores(logits.data() + t * E, bias, s.data(), c.data(), it, wt, K)) continue;
      router::noaux_group_scores(c.data(), n_group, group_size, group_score.data());
      std::iota(groups.begin(), groups.end(), 0);
      std::partial_sort(groups.begin(), groups.begin() + TG, groups.end(), [&](int32_t a, int32_t b) {
        return group_score[a] > group_score[b] || (group_score[a] == group_score[b] && a < b);
      });
      int64_t n = 0;
      for (int64_t j = 0; j < TG; ++j) {
        for (int64_t e = groups[j] * group_size; e < (groups[j] + 1) * group_size; ++e) cand[n++] = int32_t(e);
      }
      std::partial_sort(cand.begin(), cand.begin() + K, cand.end(),
                        [&](int32_t a, int32_t b) { return c[a] > c[b] || (c[a] == c[b] && a < b); });
      float sum = 0.0f;
      for (int64_t j = 0; j < K; ++j) sum += s[cand[j]];
      for (int64_t j = 0; j < K; ++j) {
        const float sj = s[cand[j]];
        const float norm = !p.renormalize ? sj : (sum > 0 ? sj / sum : 0.0f);
        it[j] = cand[j];
        wt[j] = norm * p.routed_scaling_factor;
      }
    }
  }
}

}  // namespace moe
