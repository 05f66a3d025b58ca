#include <cmath>
#include <string>

#include "core/params.h"
#include "core/rng.h"
#include "ops/matvec_bf16.h"

namespace moe {
namespace {

CheckResult run_case(const std::string& label, const MatvecBf16Params& p, uint64_t seed) {
  Rng rng(seed);
  // Router-gate-like weights N(0, 1/cols) in bf16; activations with outlier channels.
  const std::vector<bf16> W = rng.fork(1).bf16_normal_vec(p.rows * p.cols, 1.0 / std::sqrt(double(p.cols)));
  const std::vector<float> x = rng.fork(2).activations(p.cols);
  std::vector<float> truth(p.rows), r32(p.rows), fast(p.rows);

  CheckResult res{"matvec_bf16", label, params_to_string(p), seed};
  res.truth_seconds = time_call([&] { matvec_bf16_ref<double>(p, W, x, truth); });
  res.ref32.seconds = time_call([&] { matvec_bf16_ref<float>(p, W, x, r32); });
  res.fast.seconds = time_call([&] { matvec_bf16_fast(p, W, x, fast); });

  // Error bound per row (both tiers, any summation order, fused or not): the products w*x are
  // exact in f32 when fused and rounded once otherwise, and the n = cols terms are summed with
  // n - 1 roundings, so |y - sum w x| <= gamma_n * sum |w x| (S computed in f64, where each
  // product is exact). The truth is rounded to f32 once more: + u |y_truth|. The truth's own
  // f64 error (<= gamma_n(2^-53) S) and the u^2 terms are below the slack of gamma_n over n u.
  // Floor: roundings in the subnormal range are absolute (<= 2^-150 each; n of them stay below
  // the smallest normal for n < 2^24).
  std::vector<double> bound(p.rows);
  for (int64_t r = 0; r < p.rows; ++r) {
    double s = 0;
    for (int64_t c = 0; c < p.cols; ++c) s += std::fabs(double(bf16_to_f32(W[r * p.cols + c])) * x[c]);
    bound[r] = gamma_n(double(p.cols)) * s + kU32 * std::fabs(double(truth[r])) + kMinNormal32;
  }
  res.ref32.add("y", truth, r32, bound);
  res.fast.add("y", truth, fast, bound);
  return res;
}

}  // namespace

std::vector<CheckResult> matvec_bf16_check(uint64_t seed, CheckScope scope) {
  std::vector<CheckResult> out;
  if (scope_has_remainders(scope)) {
    // Column counts around the 16-lane blocking of the fast tier; row counts around its threads.
    for (int64_t cols : {1, 15, 16, 17, 31, 33, 67, 4099})
      for (int64_t rows : {1, 3, 33}) {
        const std::string label = "remainder " + std::to_string(rows) + "x" + std::to_string(cols);
        out.push_back(run_case(label, {rows, cols}, seed + uint64_t(rows * 10007 + cols)));
      }
  }
  if (scope_has_real(scope)) {
    out.push_back(run_case("DeepSeek-V3 router gate", {256, 7168}, seed));
  }
  return out;
}

}  // namespace moe
