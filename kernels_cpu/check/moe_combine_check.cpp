#include <cmath>

#include "core/math.h"
#include "core/params.h"
#include "core/rng.h"
#include "ops/moe_combine.h"

namespace moe {
namespace {

CheckResult run_case(const char* label, const MoeCombineParams& p, uint64_t seed) {
  Rng rng(seed);
  const int64_t T = p.tokens, d = p.dim, K = p.k;
  const std::vector<float> h = rng.fork(1).activations(T * d);
  const std::vector<float> e = rng.fork(2).normal_vec(T * K * d, 1.0);
  const std::vector<float> sh = rng.fork(3).normal_vec(T * d, 1.0);
  const std::vector<float> gamma = rng.fork(4).normal_vec(T, 2.0);
  // Router weights: positive, renormalised to sum 1 per token (docs/ops/moe.md "Softmax router").
  std::vector<float> w = rng.fork(5).uniform_vec(T * K, 0.01f, 1.0f);
  for (int64_t t = 0; t < T; ++t) {
    float s = 0;
    for (int64_t k = 0; k < K; ++k) s += w[t * K + k];
    for (int64_t k = 0; k < K; ++k) w[t * K + k] /= s;
  }
  std::vector<float> truth(T * d), r32(T * d), fast(T * d);
  CheckResult res{"moe_combine", label, params_to_string(p), seed};
  res.truth_seconds = time_call([&] { moe_combine_ref<double>(p, h, e, w, sh, gamma, truth); });
  res.ref32.seconds = time_call([&] { moe_combine_ref<float>(p, h, e, w, sh, gamma, r32); });
  res.fast.seconds = time_call([&] { moe_combine_fast(p, h, e, w, sh, gamma, fast); });

  // Error bound (both tiers, first order in u): out is a sum of K + 2 terms h, w_k e_k and
  // sh*sig. Each product rounds at most once (or is fused), and any summation order of K + 2
  // terms adds at most K + 1 roundings on a term's path: gamma(K+2) * (|h| + sum|w_k e_k| +
  // |sh sig|). The f32 sigmoid carries 4u (expf 2u, 1 + E u, the division u) and its product
  // with sh u more: 5u |sh sig| (0 ungated: sig = 1 exactly). The truth (f64, rounded once to
  // f32) adds u |out|; kMinNormal32 floors results near underflow.
  std::vector<double> bound(T * d);
  for (int64_t t = 0; t < T; ++t) {
    const double sig = p.gated ? sigmoid(double(gamma[t])) : 1.0;
    for (int64_t i = 0; i < d; ++i) {
      double terms = std::fabs(double(h[t * d + i]));
      for (int64_t k = 0; k < K; ++k) terms += std::fabs(double(w[t * K + k]) * e[(t * K + k) * d + i]);
      const double shg = std::fabs(sh[t * d + i] * sig);
      bound[t * d + i] = gamma_n(double(K + 2)) * (terms + shg) + (p.gated ? 5 * kU32 * shg : 0.0) +
                         kU32 * std::fabs(double(truth[t * d + i])) + kMinNormal32;
    }
  }
  res.ref32.add("out", truth, r32, bound);
  res.fast.add("out", truth, fast, bound);
  return res;
}

}  // namespace

std::vector<CheckResult> moe_combine_check(uint64_t seed, CheckScope scope) {
  std::vector<CheckResult> out;
  if (scope_has_remainders(scope)) {
    for (int64_t dim : {1, 31, 33, 67, 4099}) {
      const std::string label = "remainder dim " + std::to_string(dim);
      out.push_back(run_case(label.c_str(), {3, dim, 1, true}, seed + dim));
      out.push_back(run_case(label.c_str(), {3, dim, 3, true}, seed + dim + 1));
      out.push_back(run_case(label.c_str(), {3, dim, 3, false}, seed + dim + 2));
    }
    out.push_back(run_case("no routed experts (k 0)", {2, 33, 0, true}, seed + 3));
  }
  if (scope_has_real(scope)) {
    out.push_back(run_case("A17B K 10", {1, 4096, 10, true}, seed));
    out.push_back(run_case("A17B engine K 4", {1, 4096, 4, true}, seed + 1));
    out.push_back(run_case("A3B K 8", {1, 2048, 8, true}, seed + 2));
    out.push_back(run_case("A3B prefill 64 tokens K 8", {64, 2048, 8, true}, seed + 4));
    out.push_back(run_case("DeepSeek-V3 ungated K 8", {1, 7168, 8, false}, seed + 5));
  }
  return out;
}

}  // namespace moe
