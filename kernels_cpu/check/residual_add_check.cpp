#include <cmath>

#include "core/params.h"
#include "core/rng.h"
#include "ops/residual_add.h"

namespace moe {
namespace {

CheckResult run_case(const char* label, const ResidualAddParams& p, uint64_t seed) {
  Rng rng(seed);
  // a: the residual stream (activations with outlier channels); b: a block output, an order
  // of magnitude smaller, so the sums round (and some cancel).
  const std::vector<float> a = rng.fork(1).activations(p.n);
  const std::vector<float> b = rng.fork(2).normal_vec(p.n, 0.1);
  std::vector<float> truth(p.n), r32(p.n), fast(p.n);

  CheckResult res{"residual_add", label, params_to_string(p), seed};
  res.truth_seconds = time_call([&] { residual_add_ref<double>(p, a, b, truth); });
  res.ref32.seconds = time_call([&] { residual_add_ref<float>(p, a, b, r32); });
  res.fast.seconds = time_call([&] { residual_add_fast(p, a, b, fast); });

  // Bound 0: the sum of two f32 rounded once to f32 is the correctly rounded result in every
  // tier, and the truth (exact in f64 up to one rounding, then rounded to f32) is the same
  // correctly rounded value, since f64's 53 bits >= 2*24 + 2 make that double rounding exact.
  res.ref32.add("y", truth, r32, 0.0);
  res.fast.add("y", truth, fast, 0.0);
  return res;
}

}  // namespace

std::vector<CheckResult> residual_add_check(uint64_t seed, CheckScope scope) {
  std::vector<CheckResult> out;
  if (scope_has_remainders(scope)) {
    for (int64_t n : {1, 31, 33, 67, 4099}) {
      const std::string label = "remainder n " + std::to_string(n);
      out.push_back(run_case(label.c_str(), {n}, seed + n));
    }
  }
  if (scope_has_real(scope)) {
    out.push_back(run_case("A17B hidden", {4096}, seed));
    out.push_back(run_case("A3B hidden", {2048}, seed + 1));
    out.push_back(run_case("A3B prefill 64 tokens", {64 * 2048}, seed + 2));
    out.push_back(run_case("A17B prefill 256 tokens", {256 * 4096}, seed + 3));  // threaded
  }
  return out;
}

}  // namespace moe
