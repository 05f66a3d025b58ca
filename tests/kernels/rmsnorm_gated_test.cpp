#include <cmath>
#include <limits>

#include "check/checks.h"
#include "core/rng.h"
#include "ops/rmsnorm_gated.h"
#include "test_util.h"

namespace moe {
namespace {

using Fn = void (*)(const RmsNormGatedParams&, std::span<const float>, std::span<const float>,
                    std::span<const float>, std::span<float>);
const Fn kTiers[3] = {&rmsnorm_gated_ref<double>, &rmsnorm_gated_ref<float>, &rmsnorm_gated_fast};

TEST(rmsnorm_gated, HandComputed) {
  // o = [3, 4]: mean square 12.5, eps 0 -> inv = 1/sqrt(12.5) = 0.28284271;
  // w = [1, 2] (no +1); z = [1, -1]: silu(1) = 1/(1 + e^-1) = 0.73105858,
  // silu(-1) = -1/(1 + e) = -0.26894142.
  // y = [3 * 0.28284271 * 1 * 0.73105858, 4 * 0.28284271 * 2 * -0.26894142]
  //   = [0.62032377, -0.60854497].
  const std::vector<float> o{3, 4}, z{1, -1}, w{1, 2};
  std::vector<float> y(2);
  for (Fn f : kTiers) {
    f({1, 1, 2, 0.0f}, o, z, w, y);
    EXPECT_NEAR(y[0], 0.62032377, 1e-6);
    EXPECT_NEAR(y[1], -0.60854497, 1e-6);
  }
  // z = 0 closes the gate exactly; a large z opens it to silu(z) = z.
  std::vector<float> y2(2);
  rmsnorm_gated_ref<double>({1, 1, 2, 0.0f}, o, std::vector<float>{0, 40}, w, y2);
  EXPECT_EQ(y2[0], 0.0f);
  EXPECT_FLOAT_EQ(y2[1], float(4 / std::sqrt(12.5) * 2 * 40));
}

TEST(rmsnorm_gated, F32TierMatchesEngineOrderBitExact) {
  // CPU-C: sum of rounded squares, 1/sqrtf, ((o*inv)*w)*(z/(1+expf(-z))).
  Rng rng(7);
  const int64_t dv = 128;
  const std::vector<float> o = rng.activations(2 * dv), z = rng.activations(2 * dv),
                           w = rng.normal_vec(dv, 0.2, 1.0);
  std::vector<float> y(2 * dv);
  rmsnorm_gated_ref<float>({1, 2, dv, 1e-6f}, o, z, w, y);
  for (int h = 0; h < 2; ++h) {
    float ss = 0;
    for (int i = 0; i < dv; ++i) {
      const float sq = o[h * dv + i] * o[h * dv + i];
      ss = ss + sq;
    }
    const float inv = 1.0f / std::sqrt(ss / 128.0f + 1e-6f);
    for (int i = 0; i < dv; ++i) {
      const float zi = z[h * dv + i];
      const float e = std::exp(-zi);
      const float den = 1.0f + e;
      const float g = zi / den;
      const float a = o[h * dv + i] * inv;
      const float b = a * w[i];
      EXPECT_EQ(y[h * dv + i], b * g) << h << ' ' << i;
    }
  }
}

TEST(rmsnorm_gated, PowerOfTwoScaleOfOIsInvisibleBitExact) {
  // eps = 0: o -> 2^k o scales ss by 4^k and inv by 2^-k exactly, so y is bit-identical.
  Rng rng(4);
  const RmsNormGatedParams p{2, 5, 67, 0.0f};
  const int64_t n = p.tokens * p.heads * p.head_dim;
  const std::vector<float> o = rng.activations(n), z = rng.activations(n), w = rng.normal_vec(67, 0.2, 1.0);
  std::vector<float> o16(n);
  for (int64_t i = 0; i < n; ++i) o16[i] = o[i] * 16.0f;
  std::vector<float> ya(n), yb(n);
  for (Fn f : kTiers) {
    f(p, o, z, w, ya);
    f(p, o16, z, w, yb);
    EXPECT_EQ(ya, yb);
  }
}

TEST(rmsnorm_gated, OpenGateGivesPlainRmsNorm) {
  // z = 30: silu(30) = 30 / (1 + 9.4e-14) rounds to 30 in f32, so y / 30 is the plain RMSNorm
  // with weight w; with w = 1 each head has unit RMS.
  Rng rng(9);
  const RmsNormGatedParams p{3, 4, 128, 0.0f};
  const int64_t n = p.tokens * p.heads * p.head_dim;
  const std::vector<float> o = rng.activations(n), z(n, 30.0f), w(128, 1.0f);
  std::vector<float> y(n);
  for (Fn f : kTiers) {
    f(p, o, z, w, y);
    for (int64_t r = 0; r < p.tokens * p.heads; ++r) {
      double ss = 0;
      for (int64_t i = 0; i < 128; ++i) ss += double(y[r * 128 + i] / 30.0f) * (y[r * 128 + i] / 30.0f);
      EXPECT_NEAR(std::sqrt(ss / 128), 1.0, 1e-5) << r;
    }
  }
}

TEST(rmsnorm_gated, VeryNegativeGateGivesSignedZeroNotNan) {
  // expf(100) overflows: silu(-100) = -100 / inf = -0 in the f32 tiers (docs/ops/verification.md "Edge cases").
  const std::vector<float> o{1, 2}, z{-100, -100}, w{1, 1};
  std::vector<float> y(2);
  for (Fn f : {kTiers[1], kTiers[2]}) {
    f({1, 1, 2, 1e-6f}, o, z, w, y);
    EXPECT_EQ(y[0], 0.0f);
    EXPECT_TRUE(std::signbit(y[0]));
  }
  rmsnorm_gated_ref<double>({1, 1, 2, 1e-6f}, o, z, w, y);
  EXPECT_FALSE(std::isnan(y[0]));
  EXPECT_LT(std::fabs(y[0]), 1e-38);
}

TEST(rmsnorm_gated, InPlaceOnOAndOnZ) {
  Rng rng(5);
  const RmsNormGatedParams p{2, 32, 128, 1e-6f};
  const int64_t n = p.tokens * p.heads * p.head_dim;
  for (Fn f : kTiers) {
    std::vector<float> o = rng.activations(n), z = rng.activations(n), w = rng.normal_vec(128, 0.2, 1.0), y(n);
    f(p, o, z, w, y);
    std::vector<float> o2 = o, z2 = z;
    f(p, o2, z, w, o2);
    f(p, o, z2, w, z2);
    EXPECT_EQ(o2, y);
    EXPECT_EQ(z2, y);
  }
}

TEST(rmsnorm_gated, NanPropagation) {
  // NaN in o poisons its head (through ss); NaN in z only its element; NaN in w its channel in
  // every head.
  const int64_t dv = 8;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (Fn f : kTiers) {
    std::vector<float> o(3 * dv, 1.0f), z(3 * dv, 1.0f), w(dv, 1.0f), y(3 * dv);
    o[dv + 2] = nan;
    f({1, 3, dv, 1e-6f}, o, z, w, y);
    for (int64_t i = 0; i < 3 * dv; ++i) EXPECT_EQ(std::isnan(y[i]), i >= dv && i < 2 * dv) << i;
    o[dv + 2] = 1.0f, z[5] = nan;
    f({1, 3, dv, 1e-6f}, o, z, w, y);
    for (int64_t i = 0; i < 3 * dv; ++i) EXPECT_EQ(std::isnan(y[i]), i == 5) << i;
    z[5] = 1.0f, w[3] = nan;
    f({1, 3, dv, 1e-6f}, o, z, w, y);
    for (int64_t i = 0; i < 3 * dv; ++i) EXPECT_EQ(std::isnan(y[i]), i % dv == 3) << i;
  }
}

TEST(rmsnorm_gated, BadArguments) {
  std::vector<float> o(2 * 64 * 4), z(o.size()), w(4), y(o.size()), w5(5);
  const RmsNormGatedParams p{2, 64, 4, 1e-6f};
  test::expect_error([&] { rmsnorm_gated_ref<double>(p, o, z, w5, y); }, "rmsnorm_gated: w has 5 elements, expected 4");
  test::expect_error([&] { rmsnorm_gated_fast({3, 64, 4, 1e-6f}, o, z, w, y); },
                     "rmsnorm_gated: o has 512 elements, expected 768");
  test::expect_error([&] { rmsnorm_gated_ref<float>({2, 64, 0, 1e-6f}, o, z, w, y); }, "head_dim=0");
  test::expect_error([&] { rmsnorm_gated_ref<float>({2, -64, 4, 1e-6f}, o, z, w, y); }, "heads=-64");
  test::expect_error([&] { rmsnorm_gated_fast({2, 64, 4, -1e-6f}, o, z, w, y); }, "rmsnorm_gated: eps=-1e-06");
  std::vector<float> big(o.size() + 1);
  test::expect_error([&] { rmsnorm_gated_ref<double>(p, std::span<const float>(big).first(o.size()), z, w,
                                                     std::span<float>(big).last(o.size())); },
                     "y partially overlaps");
}

TEST(rmsnorm_gated, ThreeWayAgreement) { test::expect_all_pass(rmsnorm_gated_check(1234, CheckScope::All)); }

}  // namespace
}  // namespace moe
