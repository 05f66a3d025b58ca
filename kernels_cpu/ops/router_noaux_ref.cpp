#include <cmath>
#include <limits>

#include "core/math.h"
#include "ops/router_noaux.h"

namespace moe {

void router_noaux_validate(const RouterNoauxParams& p, std::span<const float> logits, std::span<const float> bias,
                           std::span<int32_t> idx, std::span<float> w) {
  MOE_CHECK(p.tokens >= 0, "router_noaux: tokens=" << p.tokens << ", expected >= 0");
  MOE_CHECK(p.experts >= 1 && p.experts <= std::numeric_limits<int32_t>::max(),
            "router_noaux: experts=" << p.experts << ", expected in [1, 2^31)");
  MOE_CHECK(p.n_group >= 1 && p.experts % p.n_group == 0,
            "router_noaux: experts=" << p.experts << " not divisible by n_group=" << p.n_group);
  MOE_CHECK(p.experts / p.n_group >= 2,
            "router_noaux: experts/n_group=" << p.experts / p.n_group
                                             << ", expected >= 2 (a group's score is its top-2 sum)");
  MOE_CHECK(p.topk_group >= 1 && p.topk_group <= p.n_group,
            "router_noaux: topk_group=" << p.topk_group << " out of range [1, " << p.n_group << "] (n_group)");
  const int64_t kept = p.topk_group * (p.experts / p.n_group);
  MOE_CHECK(p.k >= 1 && p.k <= kept,
            "router_noaux: k=" << p.k << " out of range [1, " << kept << "] (topk_group * experts / n_group)");
  MOE_CHECK(std::isfinite(p.routed_scaling_factor),
            "router_noaux: routed_scaling_factor=" << p.routed_scaling_factor << ", expected finite");
  check_size(logits, p.tokens * p.experts, "router_noaux", "logits");
  check_size(bias, p.experts, "router_noaux", "bias");
  check_size(idx, p.tokens * p.k, "router_noaux", "idx");
  check_size(w, p.tokens * p.k, "router_noaux", "w");
  for (int64_t e = 0; e < p.experts; ++e) {
    MOE_CHECK(std::isfinite(bias[e]),
              "router_noaux: bias[" << e << "]=" << bias[e] << ", expected finite (e_score_correction_bias)");
  }
}

template <class Acc>
void router_noaux_ref(const RouterNoauxParams& p, std::span<const float> logits, std::span<const float> bias,
                      std::span<int32_t> idx, std::span<float> w) {
  router_noaux_validate(p, logits, bias, idx, w);
  const int64_t E = p.experts, K = p.k, n_group = p.n_group, group_size = E / n_group;
  const Acc neg_inf = -std::numeric_limits<Acc>::infinity();
  std::vector<Acc> s(E), c(E), masked(E), group_score(n_group);
  std::vector<int32_t> kept(p.topk_group);
  for (int64_t t = 0; t < p.tokens; ++t) {
    int32_t* it = idx.data() + t * K;
    float* wt = w.data() + t * K;
    if (!router::noaux_scores(logits.data() + t * E, bias, s.data(), c.data(), it, wt, K)) continue;
    router::noaux_group_scores(c.data(), n_group, group_size, group_score.data());
    router::topk_lowest_index(group_score.data(), n_group, p.topk_group, kept.data());

    for (int64_t e = 0; e < E; ++e) masked[e] = neg_inf;
    for (int32_t g : kept) {
      for (int64_t e = g * group_size; e < (g + 1) * group_size; ++e) masked[e] = c[e];
    }
    // K <= topk_group * group_size, so every pick is a finite c of a kept group.
    router::topk_lowest_index(masked.data(), E, K, it);

    Acc sum = 0;
    for (int64_t j = 0; j < K; ++j) sum += s[it[j]];
    const Acc scale = Acc(p.routed_scaling_factor);
    for (int64_t j = 0; j < K; ++j) {
      const Acc sj = s[it[j]];
      const Acc norm = !p.renormalize ? sj : (sum > 0 ? sj / sum : Acc(0));
      wt[j] = float(norm * scale);
    }
  }
}

template void router_noaux_ref<float>(const RouterNoauxParams&, std::span<const float>, std::span<const float>,
                                      std::span<int32_t>, std::span<float>);
template void router_noaux_ref<double>(const RouterNoauxParams&, std::span<const float>, std::span<const float>,
                                       std::span<int32_t>, std::span<float>);

}  // namespace moe
