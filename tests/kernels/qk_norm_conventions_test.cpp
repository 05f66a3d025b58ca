// qk_norm's conventions (ops/qk_norm.h; docs/ops/norms.md "q/k norm conventions"): the eps forms
// and the q/k factors in every tier, their bound (spec/qk_norm_spec.h), and the three-way check
// with each set.
#include <cmath>
#include <limits>

#include "check/checks.h"
#include "core/params.h"
#include "ops/qk_norm.h"
#include "spec/qk_norm_spec.h"
#include "test_util.h"

namespace moe {
namespace {

using Fn = void (*)(const QkNormParams&, std::span<const float>, std::span<const float>, std::span<float>,
                    std::span<float>);
const Fn kTiers[3] = {&qk_norm_ref<double>, &qk_norm_ref<float>, &qk_norm_fast};

QkNormParams form(int64_t eps_form, int64_t scaled, float eps, int64_t head_dim = 2) {
  QkNormParams p{1, 1, head_dim, eps};
  p.eps_form = eps_form, p.scaled = scaled;
  return p;
}

// Within the bound's order: every tier's error is below qk_norm_bound under cpu_f32_model(), at
// most gamma_2 / 2 + 14.5u < 1e-6 relative for dk = 2.
void expect_close(float got, double want, const char* what) {
  EXPECT_NEAR(got, want, 1e-6 * std::fabs(want)) << what;
}

TEST(qk_norm_conventions, HandComputedEpsForms) {
  // x = [1, 0], dk = 2, eps = 0.5, so ss = 1.
  const std::vector<float> x{1, 0};
  const double r2 = 1 / std::sqrt(2.0);
  struct Want {
    QkNormParams p;
    double q, k;
  };
  const Want wants[] = {
      {form(0, 1, 0.5f), 0.5, r2},                 // inv = 1/sqrt(1/2 + 1/2) = 1; q/dk, k/sqrt(dk)
      {form(0, 0, 0.5f), 1, 1},                    // no factors
      {form(1, 1, 0.5f), 1 / std::sqrt(1.5) * r2, 1 / std::sqrt(1.5)},  // inv = 1/sqrt(1 + 1/2); q/sqrt(2)
      {form(1, 0, 0.5f), 1 / std::sqrt(1.5), 1 / std::sqrt(1.5)},
      {form(2, 1, 0.5f), r2, 1},                   // inv = 1/max(1, 1/2) = 1
      {form(2, 0, 2.0f), 0.5, 0.5},                // inv = 1/max(1, 2): eps wins
      {form(2, 1, 2.0f), 0.5 * r2, 0.5},
  };
  for (const Want& w : wants)
    for (int tier = 0; tier < 3; ++tier) {
      std::vector<float> qo(2), ko(2);
      kTiers[tier](w.p, x, x, qo, ko);
      const std::string what = params_to_string(w.p) + " tier " + std::to_string(tier);
      expect_close(qo[0], w.q, what.c_str());
      expect_close(ko[0], w.k, what.c_str());
      EXPECT_EQ(qo[1], 0.0f) << what;
      EXPECT_EQ(ko[1], 0.0f) << what;
    }
  // A zero head under the max form: 0 * (1 / eps) = 0, no NaN.
  const std::vector<float> z{0, 0};
  for (int tier = 0; tier < 3; ++tier) {
    std::vector<float> qo(2, 1.0f), ko(2, 1.0f);
    kTiers[tier](form(2, 0, 1e-6f), z, z, qo, ko);
    EXPECT_EQ(qo, z) << tier;
    EXPECT_EQ(ko, z) << tier;
  }
}

TEST(qk_norm_conventions, EveryScaledFormGivesTheSameNorms) {
  // Away from eps the forms differ only in where eps enters: |q_out| = 1/sqrt(dk) and |k_out| = 1
  // scaled, |x inv| = sqrt(dk) (form 0) or 1 (forms 1, 2) unscaled. eps = 1e-12 against |x|^2 ~ 1
  // moves them by 1e-12, far below the tolerance 1e-5 (dk = 128's sum error, gamma_128 / 2 ~ 4e-6).
  const int64_t dk = 128;
  std::vector<float> x(dk);
  for (int64_t i = 0; i < dk; ++i) x[i] = float(std::sin(double(i) + 1));
  for (int64_t f = 0; f < 3; ++f)
    for (int64_t scaled = 0; scaled < 2; ++scaled) {
      std::vector<float> qo(dk), ko(dk);
      qk_norm_ref<float>(form(f, scaled, 1e-12f, dk), x, x, qo, ko);
      double nq = 0, nk = 0;
      for (int64_t i = 0; i < dk; ++i) nq += double(qo[i]) * qo[i], nk += double(ko[i]) * ko[i];
      const double unit = f == 0 ? std::sqrt(double(dk)) : 1.0;
      EXPECT_NEAR(std::sqrt(nq), scaled ? 1 / std::sqrt(double(dk)) : unit, 1e-5) << f << " " << scaled;
      EXPECT_NEAR(std::sqrt(nk), scaled ? 1.0 : unit, 1e-5 * unit) << f << " " << scaled;
    }
}

TEST(qk_norm_conventions, WrongEpsFormIsCaughtByTheBound) {
  // The spec's inputs shrink every 5th head so eps takes part: sum + eps (HF) and max(sqrt, eps)
  // (ggml) differ there by ~eps / (2 |x|^2), far above the bound; each form passes its own.
  const QkNormParams hf = form(1, 0, 1e-6f, 128), ggml = form(2, 0, 1e-6f, 128);
  QkNormParams p1 = hf, p2 = ggml;
  p1.tokens = p2.tokens = 2, p1.heads = p2.heads = 16;
  const QkNormInputs in = qk_norm_inputs(p1, 5);
  const size_t n = in.q.size();
  std::vector<float> tq(n), tk(n), rq(n), rk(n);
  qk_norm_ref<double>(p1, in.q, in.k, tq, tk);
  const QkNormBounds b = qk_norm_bound(p1, tq, tk, cpu_f32_model());
  auto within = [&](const QkNormParams& tier_p) {
    qk_norm_ref<float>(tier_p, in.q, in.k, rq, rk);
    bool ok = true;
    for (size_t i = 0; i < n; ++i) ok = ok && std::fabs(double(rq[i]) - tq[i]) <= b.q[i];
    for (size_t i = 0; i < n; ++i) ok = ok && std::fabs(double(rk[i]) - tk[i]) <= b.k[i];
    return ok;
  };
  EXPECT_TRUE(within(p1));
  EXPECT_FALSE(within(p2));
  QkNormParams scaled = p1;
  scaled.scaled = 1;
  EXPECT_FALSE(within(scaled));
}

TEST(qk_norm_conventions, ThreeWayAgreementWithEachConvention) {
  for (int64_t f = 0; f < 3; ++f)
    for (int64_t scaled = 0; scaled < 2; ++scaled) {
      if (f == 0 && scaled == 1) continue;  // the default: qk_norm_test's ThreeWayAgreement
      const std::vector<CheckResult> rs = qk_norm_check_conventions(1234, CheckScope::All, form(f, scaled, 1e-6f));
      test::expect_all_pass(rs);
      EXPECT_NE(rs[0].params.find(f ? "eps_form=" + std::to_string(f) : "scaled=0"), std::string::npos)
          << rs[0].params;
    }
}

TEST(qk_norm_conventions, BadConventionValues) {
  const std::vector<float> x(4);
  std::vector<float> qo(4), ko(4);
  auto err = [&](const QkNormParams& p) { return test::error_of([&] { qk_norm_ref<float>(p, x, x, qo, ko); }); };
  EXPECT_EQ(err(form(3, 1, 1e-6f, 4)), "qk_norm: eps_form=3, expected 0 (mean + eps), 1 (sum + eps) or 2 (max(sqrt, eps))");
  EXPECT_EQ(err(form(0, 2, 1e-6f, 4)), "qk_norm: scaled=2, expected 0 or 1");
}

}  // namespace
}  // namespace moe
