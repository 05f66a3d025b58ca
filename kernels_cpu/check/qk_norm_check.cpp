#include <cmath>

#include "core/params.h"
#include "core/rng.h"
#include "ops/qk_norm.h"

namespace moe {
namespace {

CheckResult run_case(const char* label, const QkNormParams& p, uint64_t seed) {
  Rng rng(seed);
  const int64_t n = p.tokens * p.heads * p.head_dim;
  // q and k come out of the conv's SiLU: activations-like, with every 5th head shrunk by 1e-3
  // so that eps (1e-6 against a mean square of ~1e-6) visibly takes part in some heads.
  std::vector<float> q = rng.fork(1).activations(n), k = rng.fork(2).activations(n);
  for (int64_t r = 0; r < p.tokens * p.heads; r += 5)
    for (int64_t i = 0; i < p.head_dim; ++i) q[r * p.head_dim + i] *= 1e-3f, k[r * p.head_dim + i] *= 1e-3f;
  std::vector<float> tq(n), tk(n), rq(n), rk(n), fq(n), fk(n);

  CheckResult res{"qk_norm", label, params_to_string(p), seed};
  res.truth_seconds = time_call([&] { qk_norm_ref<double>(p, q, k, tq, tk); });
  res.ref32.seconds = time_call([&] { qk_norm_ref<float>(p, q, k, rq, rk); });
  res.fast.seconds = time_call([&] { qk_norm_fast(p, q, k, fq, fk); });

  // Error bound (both tiers, first order in u), per head of dk terms:
  //   inv = 1/sqrt(ss/dk + eps): ss has relative error <= gamma_dk in any summation order (FMA
  //   or not); /dk and +eps add 2u (both terms of the sum are >= 0, so relative errors do not
  //   grow); sqrt halves the argument's relative error and adds u; the reciprocal adds u:
  //   inv is within gamma_dk/2 + 3u.
  //   inv_scale = 1/sqrtf(dk): 2u. q_scale = inv_scale^2: 2*2u + u = 5u.
  //   Two more products per element (x*inv then *scale, or x*(inv*scale) in the fast tier): 2u.
  //   The truth's own rounding to f32: u.
  // q: gamma_dk/2 + 3u + 5u + 2u + u = gamma_dk/2 + 11u;  k: gamma_dk/2 + 3u + 2u + 2u + u =
  // gamma_dk/2 + 8u; times |y_true|, plus the smallest normal for results in the subnormal range.
  const double g = gamma_n(double(p.head_dim)) / 2;
  std::vector<double> bq(n), bk(n);
  for (int64_t i = 0; i < n; ++i) {
    bq[i] = std::fabs(double(tq[i])) * (g + 11 * kU32) + kMinNormal32;
    bk[i] = std::fabs(double(tk[i])) * (g + 8 * kU32) + kMinNormal32;
  }
  res.ref32.add("q_out", tq, rq, bq);
  res.ref32.add("k_out", tk, rk, bk);
  res.fast.add("q_out", tq, fq, bq);
  res.fast.add("k_out", tk, fk, bk);
  return res;
}

}  // namespace

std::vector<CheckResult> qk_norm_check(uint64_t seed, CheckScope scope) {
  std::vector<CheckResult> out;
  if (scope_has_remainders(scope)) {
    for (int64_t dk : {1, 31, 33, 67, 4099}) {
      const std::string label = "remainder head_dim " + std::to_string(dk);
      out.push_back(run_case(label.c_str(), {2, 3, dk, 1e-6f}, seed + dk));
    }
  }
  if (scope_has_real(scope)) {
    // Linear attention of both Qwen3.5-397B-A17B and Qwen3.6-35B-A3B: Hk = 16, dk = 128.
    out.push_back(run_case("A17B/A3B decode", {1, 16, 128, 1e-6f}, seed));
    out.push_back(run_case("A17B/A3B prefill 128 tokens", {128, 16, 128, 1e-6f}, seed + 1));  // threaded
  }
  return out;
}

}  // namespace moe
