#include <cmath>

#include "core/params.h"
#include "core/rng.h"
#include "ops/rmsnorm_gated.h"

namespace moe {
namespace {

CheckResult run_case(const char* label, const RmsNormGatedParams& p, uint64_t seed) {
  Rng rng(seed);
  const int64_t n = p.tokens * p.heads * p.head_dim;
  // o: the recurrence output, activations-like with every 5th head shrunk by 1e-3 so that eps
  // takes part; z: the gate projection (N(0,1) with x20 outliers: silu sees both tails);
  // w: the learned weight around its init of ones.
  std::vector<float> o = rng.fork(1).activations(n);
  for (int64_t r = 0; r < p.tokens * p.heads; r += 5)
    for (int64_t i = 0; i < p.head_dim; ++i) o[r * p.head_dim + i] *= 1e-3f;
  const std::vector<float> z = rng.fork(2).activations(n);
  const std::vector<float> w = rng.fork(3).normal_vec(p.head_dim, 0.2, 1.0);
  std::vector<float> truth(n), r32(n), fast(n);

  CheckResult res{"rmsnorm_gated", label, params_to_string(p), seed};
  res.truth_seconds = time_call([&] { rmsnorm_gated_ref<double>(p, o, z, w, truth); });
  res.ref32.seconds = time_call([&] { rmsnorm_gated_ref<float>(p, o, z, w, r32); });
  res.fast.seconds = time_call([&] { rmsnorm_gated_fast(p, o, z, w, fast); });

  // Error bound (both tiers, first order in u), per head of dv terms:
  //   inv = 1/sqrt(ss/dv + eps): gamma_dv/2 + 3u (ss within gamma_dv in any order; /dv, +eps:
  //   2u, halved by the sqrt; sqrt and reciprocal: 2u).
  //   silu(z) = z/(1 + expf(-z)): expf within 1 ulp (2u relative, glibc), which 1 + e carries at
  //   weight e/(1+e) <= 1, plus u for the sum and u for the division: 4u.
  //   o*inv, *w, *silu: 3u (any association). The truth's rounding to f32: u.
  // Total: |y_true| (gamma_dv/2 + 3u + 4u + 3u + u) = |y_true| (gamma_dv/2 + 11u), plus the
  // smallest normal for results in the subnormal range.
  // Where z < -88.72 (= ln FLT_MAX, rounded down), expf(-z) overflows to +inf and the f32 forms
  // return silu = -0 by design (docs/ops/verification.md "Edge cases"), while the truth keeps |silu| = |z| e^z
  // (< 3e-37): there the error is the whole |y_true|, and that is the bound (the x20 outliers
  // land there with probability ~5e-8 per element; the test VeryNegativeGate covers the path).
  const double rel = gamma_n(double(p.head_dim)) / 2 + 11 * kU32;
  std::vector<double> bound(n);
  for (int64_t i = 0; i < n; ++i) {
    const double t = std::fabs(double(truth[i]));
    bound[i] = z[i] < -88.72f ? t : t * rel + kMinNormal32;
  }
  res.ref32.add("y", truth, r32, bound);
  res.fast.add("y", truth, fast, bound);
  return res;
}

}  // namespace

std::vector<CheckResult> rmsnorm_gated_check(uint64_t seed, CheckScope scope) {
  std::vector<CheckResult> out;
  if (scope_has_remainders(scope)) {
    for (int64_t dv : {1, 31, 33, 67, 4099}) {
      const std::string label = "remainder head_dim " + std::to_string(dv);
      out.push_back(run_case(label.c_str(), {2, 3, dv, 1e-6f}, seed + dv));
    }
  }
  if (scope_has_real(scope)) {
    out.push_back(run_case("A17B decode (Hv 64)", {1, 64, 128, 1e-6f}, seed));
    out.push_back(run_case("A3B decode (Hv 32)", {1, 32, 128, 1e-6f}, seed + 1));
    out.push_back(run_case("A17B prefill 16 tokens", {16, 64, 128, 1e-6f}, seed + 2));
    out.push_back(run_case("A3B prefill 64 tokens", {64, 32, 128, 1e-6f}, seed + 3));
  }
  return out;
}

}  // namespace moe
