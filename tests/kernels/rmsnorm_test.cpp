#include <cmath>
#include <limits>

#include "check/checks.h"
#include "core/rng.h"
#include "ops/rmsnorm.h"
#include "test_util.h"

namespace moe {
namespace {

TEST(rmsnorm, HandComputed) {
  // x = [3, 4]: mean square 12.5, eps 0 -> inv = 1/sqrt(12.5); w = [1, 2].
  const std::vector<float> x{3, 4}, w{1, 2};
  std::vector<float> y(2);
  rmsnorm_ref<double>({1, 2, 0.0f, false}, x, w, y);
  EXPECT_FLOAT_EQ(y[0], float(3 / std::sqrt(12.5)));
  EXPECT_FLOAT_EQ(y[1], float(2 * 4 / std::sqrt(12.5)));
  // add_one: weights [0, 1] act as [1, 2].
  std::vector<float> y1(2);
  rmsnorm_ref<double>({1, 2, 0.0f, true}, x, std::vector<float>{0, 1}, y1);
  EXPECT_EQ(y, y1);
}

TEST(rmsnorm, F32TierMatchesEngineOrderBitExact) {
  // The f32 tier is the engines' loop: sum of rounded squares, 1/sqrtf, (x*inv)*w.
  Rng rng(7);
  const std::vector<float> x = rng.activations(257), w = rng.normal_vec(257, 0.1, 1.0);
  std::vector<float> y(257);
  rmsnorm_ref<float>({1, 257, 1e-6f, false}, x, w, y);
  float ss = 0;
  for (float v : x) {
    const float sq = v * v;
    ss = ss + sq;
  }
  const float inv = 1.0f / std::sqrt(ss / 257.0f + 1e-6f);
  for (int i = 0; i < 257; ++i) {
    const float xi = x[i] * inv;
    EXPECT_EQ(y[i], xi * w[i]) << i;
  }
}

TEST(rmsnorm, UnitWeightGivesUnitRms) {
  Rng rng(3);
  const int64_t dim = 4096;
  const std::vector<float> x = rng.activations(2 * dim), w(dim, 1.0f);
  std::vector<float> y(x.size());
  for (int tier = 0; tier < 3; ++tier) {
    if (tier == 0) rmsnorm_ref<double>({2, dim, 0.0f, false}, x, w, y);
    if (tier == 1) rmsnorm_ref<float>({2, dim, 0.0f, false}, x, w, y);
    if (tier == 2) rmsnorm_fast({2, dim, 0.0f, false}, x, w, y);
    for (int r = 0; r < 2; ++r) {
      double ss = 0;
      for (int64_t i = 0; i < dim; ++i) ss += double(y[r * dim + i]) * y[r * dim + i];
      EXPECT_NEAR(std::sqrt(ss / dim), 1.0, 1e-5) << "tier " << tier;
    }
  }
}

TEST(rmsnorm, InPlace) {
  Rng rng(5);
  std::vector<float> x = rng.activations(300), w = rng.normal_vec(100, 0.1, 1.0), y(300);
  rmsnorm_fast({3, 100, 1e-6f, false}, x, w, y);
  rmsnorm_fast({3, 100, 1e-6f, false}, x, w, x);
  EXPECT_EQ(x, y);
}

TEST(rmsnorm, NanPropagatesToItsRowOnly) {
  std::vector<float> x(2 * 8, 1.0f), w(8, 1.0f), y(16);
  x[3] = std::numeric_limits<float>::quiet_NaN();
  for (int tier = 0; tier < 3; ++tier) {
    if (tier == 0) rmsnorm_ref<double>({2, 8, 1e-6f, false}, x, w, y);
    if (tier == 1) rmsnorm_ref<float>({2, 8, 1e-6f, false}, x, w, y);
    if (tier == 2) rmsnorm_fast({2, 8, 1e-6f, false}, x, w, y);
    for (int i = 0; i < 8; ++i) EXPECT_TRUE(std::isnan(y[i])) << "tier " << tier << " i " << i;
    for (int i = 8; i < 16; ++i) EXPECT_FALSE(std::isnan(y[i])) << "tier " << tier << " i " << i;
  }
}

TEST(rmsnorm, BadArguments) {
  std::vector<float> x(10), w(5), y(10);
  test::expect_error([&] { rmsnorm_ref<double>({2, 5, 1e-6f, false}, x, std::vector<float>(4), y); },
                     "rmsnorm: w has 4 elements, expected 5");
  test::expect_error([&] { rmsnorm_fast({3, 5, 1e-6f, false}, x, w, y); }, "rmsnorm: x has 10 elements, expected 15");
  test::expect_error([&] { rmsnorm_ref<float>({2, 0, 1e-6f, false}, x, w, y); }, "dim=0");
}

TEST(rmsnorm, ThreeWayAgreement) { test::expect_all_pass(rmsnorm_check(1234, CheckScope::All)); }

}  // namespace
}  // namespace moe
