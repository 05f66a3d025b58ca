#include <cmath>
#include <limits>
#include <numbers>

#include "check/checks.h"
#include "core/rng.h"
#include "ops/glu.h"
#include "spec/glu_spec.h"
#include "test_util.h"

namespace moe {
namespace {

using Fn = void (*)(const GluParams&, std::span<const float>, std::span<const float>, std::span<float>);
const Fn kTiers[3] = {&glu_ref<double>, &glu_ref<float>, &glu_fast};

std::vector<float> run(Fn f, int64_t act, const std::vector<float>& g, const std::vector<float>& u) {
  std::vector<float> y(g.size());
  f({1, int64_t(g.size()), act}, g, u, y);
  return y;
}

// Hand-computed values (f64, HF's formulas): silu(1) = 1 / (1 + e^-1) = 0.7310585786;
// gelu_tanh(1) = 0.5 (1 + tanh(sqrt(2/pi) 1.044715)) = 0.8411919906; gelu_erf(1) =
// 0.5 (1 + erf(1/sqrt 2)) = 0.8413447461; act(0) = 0; up scales linearly.
TEST(glu, HandComputed) {
  const std::vector<float> g{1, 0, 1, -2}, u{1, 5, -3, 1};
  const double want[3][4] = {{0.7310585786300049, 0, -3 * 0.7310585786300049, -2 / (1 + std::exp(2.0))},
                             {0.8411919906082768, 0, -3 * 0.8411919906082768, -0.04540230591222},
                             {0.8413447460685429, 0, -3 * 0.8413447460685429, -0.04550026389635842}};
  for (int64_t act = 0; act < 3; ++act)
    for (Fn f : kTiers) {
      const std::vector<float> y = run(f, act, g, u);
      for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], want[act][i], 4e-7 * (1 + std::fabs(want[act][i]))) << act << " " << i;
    }
}

// Where exp overflows: act(-100) is 0 or, for SiLU's truth, the subnormal -100 e^-100 = -3.7e-42
// (both GELUs' truths are below f32's smallest subnormal); act(100) = 100 exactly; no NaN from
// inf / inf.
TEST(glu, SaturatesWithoutNaN) {
  const std::vector<float> g{-100, 100, -89, 89, -10}, u{1, 1, 1, 1, 1};
  for (int64_t act = 0; act < 3; ++act)
    for (Fn f : kTiers) {
      const std::vector<float> y = run(f, act, g, u);
      EXPECT_LE(std::fabs(y[0]), act == 0 ? 4e-42f : 0.0f) << act;
      EXPECT_EQ(y[1], 100.0f) << act;
      EXPECT_EQ(y[3], 89.0f) << act;
      for (float v : y) EXPECT_FALSE(std::isnan(v)) << act;
    }
  // silu(-89) = -89 e^-89 (1 - ...) = -3.98e-37, a normal f32: the truth keeps it; the f32 forms
  // may give 0 (exp(89) overflows), within the bound's total error there.
  const std::vector<float> y = run(&glu_ref<double>, 0, g, u);
  EXPECT_NEAR(y[2], -89 * std::exp(-89.0), 1e-43);
  const std::vector<double> b = glu_bound({1, 5, 0}, g, u, cpu_f32_model());
  EXPECT_GE(b[2], std::fabs(double(y[2])));
}

// The rule of ops/glu.h: NaN in gate or up reaches y; act(-inf) is NaN (-inf / inf, -inf * 0),
// act(+inf) * 1 = inf.
TEST(glu, NaNAndInfinities) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> g{nan, 1, -inf, inf}, u{1, nan, 1, 1};
  for (int64_t act = 0; act < 3; ++act)
    for (Fn f : kTiers) {
      const std::vector<float> y = run(f, act, g, u);
      EXPECT_TRUE(std::isnan(y[0])) << act;
      EXPECT_TRUE(std::isnan(y[1])) << act;
      EXPECT_TRUE(std::isnan(y[2])) << act;
      EXPECT_EQ(y[3], inf) << act;
    }
}

// The truth's cancellation-free forms: at g = -5 the f32 form 2 - 2 / (exp(2v) + 1) loses every
// digit (exp(2v) = 4.6e-8 vanishes next to 1), the truth keeps 0.5 g (1 + tanh v) to f64 precision.
TEST(glu, TruthKeepsTheSaturatedTail) {
  const std::vector<float> g{-5}, u{1};
  const double v = std::sqrt(2 / std::numbers::pi) * (-5 + 0.044715 * -125);
  const double want = 0.5 * -5 * 2 / (1 + std::exp(-2 * v));
  EXPECT_NEAR(run(&glu_ref<double>, 1, g, u)[0], want, 1e-7 * std::fabs(want));
  EXPECT_NEAR(run(&glu_ref<double>, 2, g, u)[0], 0.5 * -5 * std::erfc(5 / std::numbers::sqrt2), 1e-13);
}

TEST(glu, InPlaceOnEitherInput) {
  Rng rng(3);
  const int64_t rows = 40, n = 4099;  // large enough for the fast tier's threads
  const std::vector<float> g = rng.activations(rows * n), u = rng.normal_vec(rows * n, 1.0);
  for (int64_t act = 0; act < 3; ++act)
    for (Fn f : kTiers) {
      std::vector<float> y(rows * n), g2 = g, u2 = u;
      f({rows, n, act}, g, u, y);
      f({rows, n, act}, g2, u, g2);
      f({rows, n, act}, g, u2, u2);
      EXPECT_EQ(g2, y);
      EXPECT_EQ(u2, y);
    }
}

TEST(glu, BadArguments) {
  std::vector<float> a(8), b(8), y(8), b7(7);
  test::expect_error([&] { glu_ref<double>({2, 4, 0}, a, b7, y); }, "glu: up has 7 elements, expected 8");
  test::expect_error([&] { glu_fast({3, 3, 0}, a, b, y); }, "glu: gate has 8 elements, expected 9");
  test::expect_error([&] { glu_ref<float>({-1, 8, 0}, a, b, y); }, "glu: rows=-1 n=8, expected both >= 0");
  test::expect_error([&] { glu_ref<float>({1, 8, 3}, a, b, y); }, "glu: act=3, expected 0 (SiLU)");
  test::expect_error([&] { glu_fast({int64_t(1) << 40, int64_t(1) << 40, 0}, a, b, y); }, "glu: rows*n overflows");
  std::vector<float> big(9);
  test::expect_error([&] { glu_fast({1, 8, 1}, std::span<const float>(big).first(8), b, std::span<float>(big).last(8)); },
                     "y partially overlaps");
  glu_fast({0, 5, 2}, {}, {}, {});  // zero rows: a valid no-op
}

// The bound is not loose enough to pass a wrong act: the SiLU truth judged as GELU's fails.
TEST(glu, BoundCatchesAnotherAct) {
  Rng rng(4);
  const std::vector<float> g = rng.activations(257), u = rng.normal_vec(257, 1.0);
  std::vector<float> silu(257), gelu(257);
  glu_ref<double>({1, 257, 0}, g, u, silu);
  glu_ref<double>({1, 257, 1}, g, u, gelu);
  const std::vector<double> b = glu_bound({1, 257, 1}, g, u, cpu_f32_model());
  int outside = 0;
  for (size_t i = 0; i < b.size(); ++i) outside += std::fabs(double(silu[i]) - gelu[i]) > b[i];
  EXPECT_GT(outside, 200);
}

TEST(glu, ThreeWayAgreement) { test::expect_all_pass(glu_check(1234, CheckScope::All)); }

}  // namespace
}  // namespace moe
