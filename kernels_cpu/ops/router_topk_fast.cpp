#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "ops/router_topk.h"

namespace moe {

// Per token: a vectorisable max, Eigen's vectorised sum, libm expf per element (scalar on purpose: Eigen's
// packet exp and its scalar tail could give two equal logits different probabilities and so
// break the lowest-index tie rule), selection by std::partial_sort in O(E log K). Tokens are
// spread over threads when there is enough work (prefill).
void router_topk_fast(const RouterTopkParams& p, std::span<const float> logits, std::span<int32_t> idx,
                      std::span<float> w) {
  router_topk_validate(p, logits, idx, w);
  const int64_t E = p.experts, K = p.k;
#pragma omp parallel if (p.tokens * E >= (1 << 14))
  {
    Eigen::ArrayXf prob(E);
    std::vector<int32_t> order(E);
#pragma omp for schedule(static)
    for (int64_t t = 0; t < p.tokens; ++t) {
      const float* x = logits.data() + t * E;
      int32_t* it = idx.data() + t * K;
      float* wt = w.data() + t * K;
      // The max may skip a NaN, but the NaN logit's own exp is NaN and so is the sum.
      float m = x[0];
      for (int64_t i = 1; i < E; ++i) m = x[i] > m ? x[i] : m;
      for (int64_t i = 0; i < E; ++i) prob[i] = std::exp(x[i] - m);
      const float sum = prob.sum();
      if (std::isnan(sum)) {
        router::fill_nan_row(it, wt, K);
        continue;
      }
      prob *= 1.0f / sum;
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + K, order.end(), [&](int32_t a, int32_t b) {
        return prob[a] > prob[b] || (prob[a] == prob[b] && a < b);
      });
      float chosen_sum = 0.0f;
      for (int64_t j = 0; j < K; ++j) chosen_sum += prob[order[j]];
      const float inv_chosen = 1.0f / chosen_sum;
      for (int64_t j = 0; j < K; ++j) {
        it[j] = order[j];
        wt[j] = p.renormalize ? prob[order[j]] * inv_chosen : prob[order[j]];
      }
      router::sort_by_weight(it, wt, K);
    }
  }
}

}  // namespace moe
