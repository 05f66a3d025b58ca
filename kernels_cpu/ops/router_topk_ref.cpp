#include <cmath>
#include <limits>
#include <type_traits>

#include "core/math.h"
#include "ops/router_topk.h"

namespace moe {

void router_topk_validate(const RouterTopkParams& p, std::span<const float> logits, std::span<int32_t> idx,
                          std::span<float> w) {
  MOE_CHECK(p.tokens >= 0, "router_topk: tokens=" << p.tokens << ", expected >= 0");
  MOE_CHECK(p.experts >= 1 && p.experts <= std::numeric_limits<int32_t>::max(),
            "router_topk: experts=" << p.experts << ", expected in [1, 2^31)");
  MOE_CHECK(p.k >= 1 && p.k <= p.experts,
            "router_topk: k=" << p.k << " out of range [1, " << p.experts << "] (experts=" << p.experts << ")");
  check_size(logits, p.tokens * p.experts, "router_topk", "logits");
  check_size(idx, p.tokens * p.k, "router_topk", "idx");
  check_size(w, p.tokens * p.k, "router_topk", "w");
}

template <class Acc>
void router_topk_ref(const RouterTopkParams& p, std::span<const float> logits, std::span<int32_t> idx,
                     std::span<float> w) {
  router_topk_validate(p, logits, idx, w);
  const int64_t E = p.experts, K = p.k;
  std::vector<Acc> prob(E);
  std::vector<Acc> slot(K);
  for (int64_t t = 0; t < p.tokens; ++t) {
    const float* x = logits.data() + t * E;
    int32_t* it = idx.data() + t * K;
    float* wt = w.data() + t * K;

    // Softmax (docs/ops/README.md "Scalar helpers"): max by strict `>` from x_0, exponentials stored while summing in
    // index order, then multiplied by the reciprocal of the sum.
    Acc m = Acc(x[0]);
    for (int64_t i = 1; i < E; ++i) {
      if (Acc(x[i]) > m) m = Acc(x[i]);
    }
    Acc sum = 0;
    for (int64_t i = 0; i < E; ++i) {
      prob[i] = std::exp(Acc(x[i]) - m);
      sum += prob[i];
    }
    // A NaN logit (or +inf, or all -inf: exp(inf - inf)) makes some e_i, hence the sum, NaN.
    if (std::isnan(sum)) {
      router::fill_nan_row(it, wt, K);
      continue;
    }
    const Acc inv = Acc(1) / sum;
    for (int64_t i = 0; i < E; ++i) prob[i] = prob[i] * inv;

    router::topk_lowest_index(prob.data(), E, K, it);

    // The renormalisation sum. f32: the engine's slot scan (CPU-C `cpu_topk`), summed in slot
    // order, so the weights are bit-exact with CPU-C (the slot values depend on the values only,
    // not on which of two tied experts fills a slot). f64: the chosen in descending order (in
    // f64 any order is within K 2^-53, far below the f32 tiers' errors).
    Acc chosen_sum = 0;
    if constexpr (std::is_same_v<Acc, float>) {
      for (int64_t j = 0; j < K; ++j) slot[j] = -1e30f;
      for (int64_t i = 0; i < E; ++i) {
        int64_t smallest = 0;
        for (int64_t j = 1; j < K; ++j) {
          if (slot[j] < slot[smallest]) smallest = j;
        }
        if (prob[i] > slot[smallest]) slot[smallest] = prob[i];
      }
      for (int64_t j = 0; j < K; ++j) chosen_sum += slot[j];
    } else {
      for (int64_t j = 0; j < K; ++j) chosen_sum += prob[it[j]];
    }
    // chosen_sum >= the largest p = 1/sum > 0, so the engines' "only if sum > 0" always holds.
    const Acc inv_chosen = Acc(1) / chosen_sum;
    for (int64_t j = 0; j < K; ++j) wt[j] = float(p.renormalize ? prob[it[j]] * inv_chosen : prob[it[j]]);
    router::sort_by_weight(it, wt, K);
  }
}

template void router_topk_ref<float>(const RouterTopkParams&, std::span<const float>, std::span<int32_t>,
                                     std::span<float>);
template void router_topk_ref<double>(const RouterTopkParams&, std::span<const float>, std::span<int32_t>,
                                      std::span<float>);

}  // namespace moe
