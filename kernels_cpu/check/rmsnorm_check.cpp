#include <cmath>

#include "core/params.h"
#include "core/rng.h"
#include "ops/rmsnorm.h"

namespace moe {
namespace {

CheckResult run_case(const char* label, const RmsNormParams& p, uint64_t seed) {
  Rng rng(seed);
  const std::vector<float> x = rng.fork(1).activations(p.rows * p.dim);
  const std::vector<float> w = p.add_one ? rng.fork(2).normal_vec(p.dim, 0.2) : rng.fork(2).normal_vec(p.dim, 0.2, 1.0);
  std::vector<float> truth(x.size()), r32(x.size()), fast(x.size());

  CheckResult res{"rmsnorm", label, params_to_string(p), seed};
  res.truth_seconds = time_call([&] { rmsnorm_ref<double>(p, x, w, truth); });
  res.ref32.seconds = time_call([&] { rmsnorm_ref<float>(p, x, w, r32); });
  res.fast.seconds = time_call([&] { rmsnorm_fast(p, x, w, fast); });

  // Error bound (both tiers, first order in u): the sum of squares carries a relative error
  // <= gamma_dim in any summation order; the division by dim, the +eps, the sqrt (which halves a
  // relative error) and the reciprocal add 3u; (1 + w), x*inv and *w' add 3u; the truth's own
  // rounding to f32 adds u. So |y - y_true| <= |y_true| (gamma_dim / 2 + 8u), plus the
  // smallest normal for results that land in the subnormal range.
  const double rel = gamma_n(double(p.dim)) / 2 + 8 * kU32;
  std::vector<double> bound(x.size());
  for (size_t i = 0; i < x.size(); ++i) bound[i] = std::fabs(double(truth[i])) * rel + kMinNormal32;
  res.ref32.add("y", truth, r32, bound);
  res.fast.add("y", truth, fast, bound);
  return res;
}

}  // namespace

std::vector<CheckResult> rmsnorm_check(uint64_t seed, CheckScope scope) {
  std::vector<CheckResult> out;
  if (scope_has_remainders(scope)) {
    for (int64_t dim : {1, 31, 33, 67, 4099}) {
      const std::string label = "remainder dim " + std::to_string(dim);
      out.push_back(run_case(label.c_str(), {3, dim, 1e-6f, false}, seed + dim));
      out.push_back(run_case(label.c_str(), {3, dim, 1e-6f, true}, seed + dim + 1));
    }
  }
  if (scope_has_real(scope)) {
    out.push_back(run_case("A17B hidden", {1, 4096, 1e-6f, false}, seed));
    out.push_back(run_case("A17B q heads", {32, 256, 1e-6f, false}, seed + 1));
    out.push_back(run_case("A17B k heads", {2, 256, 1e-6f, false}, seed + 2));
    out.push_back(run_case("A3B hidden", {1, 2048, 1e-6f, false}, seed + 3));
    out.push_back(run_case("A3B q heads", {16, 256, 1e-6f, false}, seed + 4));
    out.push_back(run_case("A3B prefill 64 tokens", {64, 2048, 1e-6f, false}, seed + 5));
  }
  return out;
}

}  // namespace moe
