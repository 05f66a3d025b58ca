#include <cmath>
#include <limits>

#include "check/checks.h"
#include "core/rng.h"
#include "ops/decay_beta.h"
#include "test_util.h"

namespace moe {
namespace {

using Fn = void (*)(const DecayBetaParams&, std::span<const float>, std::span<const float>, std::span<const float>,
                    std::span<const float>, std::span<float>, std::span<float>);
const Fn kTiers[3] = {&decay_beta_ref<double>, &decay_beta_ref<float>, &decay_beta_fast};

TEST(decay_beta, HandComputed) {
  // Head 0: a + dt_bias = 0 -> softplus = ln 2; A = exp(0) = 1 -> g = exp(-ln 2) = 1/2; b = 0 -> beta 1/2.
  // Head 1: a + dt_bias = ln 3 - 1 + 1 -> softplus = ln 4; A = exp(ln 0.5) -> g = exp(-ln 2) = 1/2;
  //         b = ln 3 -> beta = 1 / (1 + 1/3) = 3/4.
  const float l3 = float(std::log(3.0));
  const std::vector<float> a{0.0f, l3 - 1.0f}, b{0.0f, l3}, A_log{0.0f, float(std::log(0.5))}, dt{0.0f, 1.0f};
  for (int tier = 0; tier < 3; ++tier) {
    std::vector<float> g(2), beta(2);
    kTiers[tier]({1, 2}, a, b, A_log, dt, g, beta);
    EXPECT_NEAR(g[0], 0.5, 1e-7) << "tier " << tier;
    EXPECT_NEAR(g[1], 0.5, 1e-7) << "tier " << tier;
    EXPECT_NEAR(beta[0], 0.5, 1e-7) << "tier " << tier;
    EXPECT_NEAR(beta[1], 0.75, 1e-7) << "tier " << tier;
  }
}

TEST(decay_beta, F32TierMatchesEngineFormBitExact) {
  // CPU-R compute_decay_beta_cpu: sp = (1 + exp(a + dt)).ln(); g = exp(-exp(A_log) * sp); beta = 1/(1+exp(-b)).
  const int64_t T = 4, H = 33;
  Rng rng(21);
  const std::vector<float> a = rng.normal_vec(T * H, 3.0), b = rng.normal_vec(T * H, 3.0);
  const std::vector<float> A_log = rng.uniform_vec(H, -1.0f, 2.7f), dt = rng.uniform_vec(H, -6.0f, -2.0f);
  std::vector<float> g(T * H), beta(T * H);
  decay_beta_ref<float>({T, H}, a, b, A_log, dt, g, beta);
  for (int64_t i = 0; i < T * H; ++i) {
    const int64_t h = i % H;
    const float u = a[i] + dt[h];
    const float e = std::exp(u);
    const float sp = std::log(1.0f + e);
    const float A = std::exp(A_log[h]);
    const float P = A * sp;
    EXPECT_EQ(g[i], std::exp(-P)) << i;
    const float eb = std::exp(-b[i]);
    EXPECT_EQ(beta[i], 1.0f / (1.0f + eb)) << i;
  }
}

TEST(decay_beta, SoftplusOverflowRegion) {
  // u = 100 > 88.72: the engines' expf(u) = inf, so g = exp(-A * inf) = 0 exactly, whatever A.
  // With A = 1e-4 the truth is exp(-1e-4 * 100) = exp(-0.01) = 0.99005: the f32 tier is wrong by
  // design (documented); the fast tier's stable softplus stays accurate.
  const std::vector<float> a{100.0f}, b{0.0f}, A_log{float(std::log(1e-4))}, dt{0.0f};
  std::vector<float> g32(1), g64(1), gf(1), beta(1);
  decay_beta_ref<float>({1, 1}, a, b, A_log, dt, g32, beta);
  decay_beta_ref<double>({1, 1}, a, b, A_log, dt, g64, beta);
  decay_beta_fast({1, 1}, a, b, A_log, dt, gf, beta);
  EXPECT_EQ(g32[0], 0.0f);
  const double truth = std::exp(-std::exp(double(A_log[0])) * 100.0);
  EXPECT_EQ(g64[0], float(truth));
  EXPECT_NEAR(gf[0], truth, 1e-6);
  EXPECT_GT(truth, 0.99);
}

TEST(decay_beta, SoftplusUnderflowRegion) {
  // u = -20 < -16.6: 1 + expf(u) rounds to 1, so the f32 softplus is 0 and g = 1 exactly; the
  // truth is exp(-16 e^-20) = 1 - 3.3e-8, which rounds to the f32 just below 1.
  const std::vector<float> a{-20.0f}, b{0.0f}, A_log{float(std::log(16.0))}, dt{0.0f};
  std::vector<float> g32(1), g64(1), gf(1), beta(1);
  decay_beta_ref<float>({1, 1}, a, b, A_log, dt, g32, beta);
  decay_beta_ref<double>({1, 1}, a, b, A_log, dt, g64, beta);
  decay_beta_fast({1, 1}, a, b, A_log, dt, gf, beta);
  EXPECT_EQ(g32[0], 1.0f);
  EXPECT_EQ(g64[0], std::nextafter(1.0f, 0.0f));
  EXPECT_NEAR(gf[0], g64[0], 6e-8);
}

TEST(decay_beta, RangesOverExtremeInputs) {
  // g in [0, 1] and beta in [0, 1] for any finite input, every tier, no NaN.
  const int64_t T = 64, H = 32;
  Rng rng(22);
  const std::vector<float> a = rng.uniform_vec(T * H, -300.0f, 300.0f), b = rng.uniform_vec(T * H, -300.0f, 300.0f);
  const std::vector<float> A_log = rng.uniform_vec(H, -12.0f, 4.0f), dt = rng.uniform_vec(H, -7.0f, 1.0f);
  for (int tier = 0; tier < 3; ++tier) {
    std::vector<float> g(T * H), beta(T * H);
    kTiers[tier]({T, H}, a, b, A_log, dt, g, beta);
    for (int64_t i = 0; i < T * H; ++i) {
      EXPECT_TRUE(g[i] >= 0.0f && g[i] <= 1.0f) << "tier " << tier << " i " << i << " g " << g[i];
      EXPECT_TRUE(beta[i] >= 0.0f && beta[i] <= 1.0f) << "tier " << tier << " i " << i << " beta " << beta[i];
    }
  }
}

TEST(decay_beta, InPlace) {
  const int64_t T = 5, H = 17;
  Rng rng(23);
  const std::vector<float> a = rng.normal_vec(T * H, 2.0), b = rng.normal_vec(T * H, 2.0);
  const std::vector<float> A_log = rng.uniform_vec(H, 0.0f, 2.7f), dt = rng.uniform_vec(H, -6.0f, -2.0f);
  for (int tier = 0; tier < 3; ++tier) {
    std::vector<float> g(T * H), beta(T * H), ga = a, bb = b;
    kTiers[tier]({T, H}, a, b, A_log, dt, g, beta);
    kTiers[tier]({T, H}, ga, bb, A_log, dt, ga, bb);
    EXPECT_EQ(ga, g) << "tier " << tier;
    EXPECT_EQ(bb, beta) << "tier " << tier;
  }
}

TEST(decay_beta, NanReachesOnlyItsOutputs) {
  // NaN in a[t=1][h=2] -> g[1][2] only; NaN in b[0][3] -> beta[0][3] only; NaN in A_log[0] ->
  // g[:, 0] only.
  const int64_t T = 2, H = 4;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> a(T * H, 0.5f), b(T * H, -0.5f), A_log(H, 0.5f), dt(H, -3.0f);
  a[1 * H + 2] = nan, b[0 * H + 3] = nan, A_log[0] = nan;
  for (int tier = 0; tier < 3; ++tier) {
    std::vector<float> g(T * H), beta(T * H);
    kTiers[tier]({T, H}, a, b, A_log, dt, g, beta);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < H; ++h) {
        EXPECT_EQ(std::isnan(g[t * H + h]), h == 0 || (t == 1 && h == 2)) << "tier " << tier << " t " << t << " h " << h;
        EXPECT_EQ(std::isnan(beta[t * H + h]), t == 0 && h == 3) << "tier " << tier << " t " << t << " h " << h;
      }
  }
}

TEST(decay_beta, BadArguments) {
  std::vector<float> a(6), b(6), A_log(3), dt(3), g(6), beta(6);
  test::expect_error([&] { decay_beta_ref<double>({2, 3}, a, b, std::vector<float>(2), dt, g, beta); },
                     "decay_beta: A_log has 2 elements, expected 3");
  test::expect_error([&] { decay_beta_fast({2, 3}, a, std::vector<float>(5), A_log, dt, g, beta); },
                     "decay_beta: b has 5 elements, expected 6");
  test::expect_error([&] { decay_beta_ref<float>({3, 3}, a, b, A_log, dt, g, beta); },
                     "decay_beta: a has 6 elements, expected 9");
  test::expect_error([&] { decay_beta_ref<float>({2, 0}, a, b, A_log, dt, g, beta); }, "heads=0");
  test::expect_error([&] { decay_beta_fast({2, 3}, a, b, A_log, dt, g, g); }, "g overlaps beta");
  std::vector<float> ag(9);
  test::expect_error([&] { decay_beta_ref<double>({2, 3}, std::span<const float>(ag).subspan(0, 6), b, A_log, dt,
                                                  std::span<float>(ag).subspan(3, 6), beta); },
                     "g overlaps a without being the same buffer");
  test::expect_error([&] { decay_beta_ref<float>({2, 3}, a, b, A_log, dt, g, std::span<float>(a.data(), 6)); },
                     "beta overlaps a");
}

TEST(decay_beta, ThreeWayAgreement) { test::expect_all_pass(decay_beta_check(1234, CheckScope::All)); }

}  // namespace
}  // namespace moe
