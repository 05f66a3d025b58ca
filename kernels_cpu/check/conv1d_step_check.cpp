#include <cmath>
#include <string>

#include "core/bf16.h"
#include "core/params.h"
#include "core/rng.h"
#include "ops/conv1d_step.h"

namespace moe {
namespace {

// silu(a) for a < -ln(FLT_MAX) = -88.72: exp(-a) overflows in f32 and the division form gives
// -0, while the truth is a*e^a/(1+e^a), |.| < 88.73 * e^-88.72 < 2.7e-37 (|a|e^a decreases for
// a < -1). 2^-121 = 3.8e-37 covers it; it also covers the subnormal floor kMinNormal32.
constexpr double kSiluOverflowFloor = 0x1.0p-121;

// Inputs: x_scale scales the raw qkv activations (1 = realistic; large values push acc into
// silu's exp-overflow region), w is bf16 as in the checkpoints.
CheckResult run_case(const std::string& label, const Conv1dStepParams& p, uint64_t seed, float x_scale = 1.0f) {
  Rng rng(seed);
  const int64_t C = p.channels, K = p.kernel, T = p.tokens;
  std::vector<float> x = rng.fork(1).activations(T * C);
  std::vector<float> state0 = rng.fork(2).activations((K - 1) * C);  // mid-sequence: earlier raw inputs
  for (auto& v : x) v *= x_scale;
  for (auto& v : state0) v *= x_scale;
  std::vector<float> w(C * K);
  {
    Rng rw = rng.fork(3);
    for (auto& v : w) v = bf16_to_f32(f32_to_bf16_rne(float(0.3 * rw.normal())));
  }
  std::vector<float> truth(T * C), r32(T * C), fast(T * C);
  std::vector<float> st_truth = state0, st_r32 = state0, st_fast = state0;

  CheckResult res{"conv1d_step", label, params_to_string(p), seed};
  res.truth_seconds = time_call([&] { conv1d_step_ref<double>(p, x, w, st_truth, truth); });
  res.ref32.seconds = time_call([&] { conv1d_step_ref<float>(p, x, w, st_r32, r32); });
  res.fast.seconds = time_call([&] { conv1d_step_fast(p, x, w, st_fast, fast); });

  // Error bound per output (both tiers, first order in u):
  // - acc is a sum of K products (fused or not, any order): |acc - acc_true| <= gamma_K * sum|terms|
  //   (the truth's f64 sum of exact f32 products is exact to 2^-53, negligible);
  // - silu propagates an error in acc by |silu'(a)| = |s(a)(1 + a(1 - s(a)))| <= 1.0999 < 1.1;
  // - evaluating silu: exp within 2 ulp (4u relative; damped by E/(1+E) <= 1 in a/(1+E)),
  //   1 + E and the division u each, the truth's rounding to f32 u: 7u |y|;
  // - plus kSiluOverflowFloor for the f32 exp overflow at a < -88.72 (and subnormal results).
  // The state is the raw inputs moved between slots: bit-exact (bound 0).
  std::vector<double> bound(T * C);
  std::vector<double> hist(state0.begin(), state0.end());  // the state as the truth sees it
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t c = 0; c < C; ++c) {
      double sum_abs = std::fabs(double(x[t * C + c]) * w[c * K + K - 1]);
      for (int64_t j = 0; j < K - 1; ++j) sum_abs += std::fabs(hist[j * C + c] * w[c * K + j]);
      bound[t * C + c] = 1.1 * gamma_n(double(K)) * sum_abs + 7 * kU32 * std::fabs(double(truth[t * C + c])) +
                         kSiluOverflowFloor;
      for (int64_t j = 0; j + 1 < K - 1; ++j) hist[j * C + c] = hist[(j + 1) * C + c];
      if (K > 1) hist[(K - 2) * C + c] = x[t * C + c];
    }
  }
  res.ref32.add("y", truth, r32, bound);
  res.fast.add("y", truth, fast, bound);
  res.ref32.add("state", st_truth, st_r32, 0.0);
  res.fast.add("state", st_truth, st_fast, 0.0);
  return res;
}

}  // namespace

std::vector<CheckResult> conv1d_step_check(uint64_t seed, CheckScope scope) {
  std::vector<CheckResult> out;
  if (scope_has_remainders(scope)) {
    for (int64_t C : {1, 31, 33, 67, 4099})
      out.push_back(run_case("remainder channels " + std::to_string(C), {3, C, 4}, seed + C));
    out.push_back(run_case("kernel 2", {5, 33, 2}, seed + 1));
    out.push_back(run_case("kernel 1 (no state)", {2, 31, 1}, seed + 2));
    out.push_back(run_case("|acc| up to ~200 (silu exp overflow)", {4, 1031, 4}, seed + 3, 40.0f));
  }
  if (scope_has_real(scope)) {
    // C = 2*Hk*dk + Hv*dv: A17B 2*16*128 + 64*128 = 12288; A3B 2*16*128 + 32*128 = 8192.
    out.push_back(run_case("A17B decode", {1, 12288, 4}, seed + 10));
    out.push_back(run_case("A17B 16 tokens", {16, 12288, 4}, seed + 11));
    out.push_back(run_case("A3B 16 tokens", {16, 8192, 4}, seed + 12));
  }
  return out;
}

}  // namespace moe
