#include <cmath>
#include <limits>

#include "check/checks.h"
#include "core/rng.h"
#include "ops/residual_add.h"
#include "test_util.h"

namespace moe {
namespace {

using Fn = void (*)(const ResidualAddParams&, std::span<const float>, std::span<const float>, std::span<float>);
const Fn kTiers[3] = {&residual_add_ref<double>, &residual_add_ref<float>, &residual_add_fast};

TEST(residual_add, HandComputed) {
  // 1 + 2 = 3; 0.5 + 0.25 = 0.75 (exact); 1 + 2^-24 ties to even -> 1; 1 + 3*2^-24 -> 1 + 2^-22
  // (also a tie, to the even 1 + 2 ulp); -0 + -0 = -0; 2^-149 + 2^-149 = 2^-148 (subnormals kept, no FTZ).
  const float tiny = std::numeric_limits<float>::denorm_min();
  const std::vector<float> a{1, 0.5f, 1, 1, -0.0f, tiny};
  const std::vector<float> b{2, 0.25f, 0x1.0p-24f, 3 * 0x1.0p-24f, -0.0f, tiny};
  const std::vector<float> want{3, 0.75f, 1, 1 + 0x1.0p-22f, -0.0f, 2 * tiny};
  for (Fn f : kTiers) {
    std::vector<float> y(a.size());
    f({int64_t(a.size())}, a, b, y);
    for (size_t i = 0; i < y.size(); ++i) {
      EXPECT_EQ(y[i], want[i]) << i;
      EXPECT_EQ(std::signbit(y[i]), std::signbit(want[i])) << i;
    }
  }
}

TEST(residual_add, BitExactWithF32AddAndCommutative) {
  Rng rng(2);
  const int64_t n = 5000;
  const std::vector<float> a = rng.activations(n), b = rng.normal_vec(n, 0.1);
  for (Fn f : kTiers) {
    std::vector<float> ab(n), ba(n);
    f({n}, a, b, ab);
    f({n}, b, a, ba);
    EXPECT_EQ(ab, ba);
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(ab[i], a[i] + b[i]) << i;
  }
}

TEST(residual_add, OverflowAndSpecials) {
  const float inf = std::numeric_limits<float>::infinity(), big = std::numeric_limits<float>::max();
  const std::vector<float> a{big, -big, inf, inf, 1};
  const std::vector<float> b{big, -big, -inf, 1, std::numeric_limits<float>::quiet_NaN()};
  for (Fn f : kTiers) {
    std::vector<float> y(5);
    f({5}, a, b, y);
    EXPECT_EQ(y[0], inf);
    EXPECT_EQ(y[1], -inf);
    EXPECT_TRUE(std::isnan(y[2]));  // inf + -inf
    EXPECT_EQ(y[3], inf);
    EXPECT_TRUE(std::isnan(y[4]));  // NaN propagates
  }
}

TEST(residual_add, InPlaceOnEitherInput) {
  Rng rng(3);
  const int64_t n = (1 << 20) + 3;  // large enough for the fast tier's threads
  const std::vector<float> a = rng.activations(n), b = rng.normal_vec(n, 0.1);
  for (Fn f : kTiers) {
    std::vector<float> y(n), a2 = a, b2 = b;
    f({n}, a, b, y);
    f({n}, a2, b, a2);
    f({n}, a, b2, b2);
    EXPECT_EQ(a2, y);
    EXPECT_EQ(b2, y);
  }
}

TEST(residual_add, BadArguments) {
  std::vector<float> a(8), b(8), y(8), b7(7);
  test::expect_error([&] { residual_add_ref<double>({8}, a, b7, y); }, "residual_add: b has 7 elements, expected 8");
  test::expect_error([&] { residual_add_fast({9}, a, b, y); }, "residual_add: a has 8 elements, expected 9");
  test::expect_error([&] { residual_add_ref<float>({-1}, a, b, y); }, "residual_add: n=-1");
  std::vector<float> big(9);
  test::expect_error([&] { residual_add_fast({8}, std::span<const float>(big).first(8), b,
                                             std::span<float>(big).last(8)); },
                     "y partially overlaps");
  // Zero elements is a valid no-op.
  residual_add_fast({0}, {}, {}, {});
}

TEST(residual_add, ThreeWayAgreement) { test::expect_all_pass(residual_add_check(1234, CheckScope::All)); }

}  // namespace
}  // namespace moe
