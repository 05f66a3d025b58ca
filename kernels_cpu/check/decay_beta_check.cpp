// decay_beta's three-way check: the shapes (those the CPU judges), inputs and bounds of
// spec/decay_beta_spec.h. The fast tier's exp and log1p are Eigen's: cpu_eigen_model().
#include <cmath>
#include <string>

#include "check/checks.h"
#include "check/three_tiers.h"
#include "ops/decay_beta.h"
#include "spec/decay_beta_spec.h"

namespace moe {

std::vector<CheckResult> decay_beta_check(uint64_t seed, CheckScope scope) {
  return check_shapes("decay_beta", decay_beta_shapes(scope_has_remainders(scope), scope_has_real(scope)), seed, [](const DecayBetaShape& s, CheckResult& res) {
    const DecayBetaParams& p = s.p;
    const DecayBetaInputs in = decay_beta_inputs(p, res.seed, s.variant);
    const size_t n = in.a.size();
    std::vector<float> g_t(n), b_t(n), g_r(n), b_r(n), g_f(n), b_f(n);
    res.truth_seconds = time_call([&] { decay_beta_ref<double>(p, in.a, in.b, in.A_log, in.dt_bias, g_t, b_t); });
    res.ref32.seconds = time_call([&] { decay_beta_ref<float>(p, in.a, in.b, in.A_log, in.dt_bias, g_r, b_r); });
    res.fast.seconds = time_call([&] { decay_beta_fast(p, in.a, in.b, in.A_log, in.dt_bias, g_f, b_f); });
    const DecayBetaBounds bd = decay_beta_bound(p, in.a, in.b, in.A_log, in.dt_bias, g_t, b_t, cpu_eigen_model());
    // The f32 tier is the engines' form: where its expf(fl(a + dt_bias)) overflows, its g is 0 by
    // definition, held exactly (bound 0); the fast tier (stable form) to the truth everywhere.
    std::vector<float> g_r_expected = g_t;
    std::vector<double> gb_r = bd.g;
    int64_t overflowed = 0;
    for (size_t i = 0; i < n; ++i)
      if (std::isinf(std::exp(in.a[i] + in.dt_bias[i % size_t(p.heads)])))
        g_r_expected[i] = 0.0f, gb_r[i] = 0.0, ++overflowed;
    if (overflowed) res.shape += " (f32 g = 0 at " + std::to_string(overflowed) + " overflows)";
    res.ref32.add("g", g_r_expected, g_r, gb_r);
    res.fast.add("g", g_t, g_f, bd.g);
    res.ref32.add("beta", b_t, b_r, bd.beta);
    res.fast.add("beta", b_t, b_f, bd.beta);
  });
}

}  // namespace moe
