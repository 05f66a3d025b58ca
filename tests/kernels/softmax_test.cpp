#include <cmath>
#include <limits>

#include "check/checks.h"
#include "core/rng.h"
#include "ops/softmax.h"
#include "spec/softmax_spec.h"
#include "test_util.h"

namespace moe {
namespace {

using Fn = void (*)(const SoftmaxParams&, std::span<const float>, std::span<const float>, std::span<float>);
const Fn kTiers[3] = {&softmax_ref<double>, &softmax_ref<float>, &softmax_fast};
const float kInf = std::numeric_limits<float>::infinity();

// softmax(0, ln 3) = (1/4, 3/4); a column of one is 1; with scale 2 and a mask of (0, -inf, ln 2):
// z = (2 a, -inf, 2 b + ln 2).
TEST(softmax, HandComputed) {
  for (Fn f : kTiers) {
    std::vector<float> y(2);
    f({1, 2, 0, 1.0f}, std::vector<float>{0, std::log(3.0f)}, {}, y);
    EXPECT_NEAR(y[0], 0.25, 1e-7);
    EXPECT_NEAR(y[1], 0.75, 1e-7);
    std::vector<float> one(4);
    f({4, 1, 0, -3.0f}, std::vector<float>{5, -7, 1e30f, 0}, {}, one);
    for (float v : one) EXPECT_EQ(v, 1.0f);
    std::vector<float> z(3);
    f({1, 3, 1, 2.0f}, std::vector<float>{0.5f, 100, 0.0f}, std::vector<float>{0, -kInf, std::log(2.0f)}, z);
    // e^1 : 0 : 2 -> (e / (e + 2), 0, 2 / (e + 2))
    EXPECT_NEAR(z[0], std::exp(1.0) / (std::exp(1.0) + 2), 1e-6);
    EXPECT_EQ(z[1], 0.0f);
    EXPECT_NEAR(z[2], 2 / (std::exp(1.0) + 2), 1e-6);
  }
}

// Row r takes mask row r % mask_rows: rows (head, token) with token fastest see the token's row.
TEST(softmax, MaskRowsBroadcastOverHeads) {
  const int64_t heads = 3, tokens = 2, cols = 4;
  Rng rng(5);
  const std::vector<float> x = rng.normal_vec(heads * tokens * cols, 2.0);
  const std::vector<float> mask{0, 0, -kInf, -kInf, 0, 0, 0, -kInf};  // causal, 2 tokens after 1
  for (Fn f : kTiers) {
    std::vector<float> y(x.size());
    f({heads * tokens, cols, tokens, 1.0f}, x, mask, y);
    for (int64_t r = 0; r < heads * tokens; ++r) {
      const int64_t t = r % tokens;
      double sum = 0;
      for (int64_t c = 0; c < cols; ++c) {
        const float v = y[size_t(r * cols + c)];
        if (c > 1 + t) {
          EXPECT_EQ(v, 0.0f) << r << " " << c;
        }
        sum += v;
      }
      EXPECT_NEAR(sum, 1.0, 1e-6) << r;
      // Without the mask row, the same row over its first 2 + t columns.
      std::vector<float> alone(size_t(2 + t));
      f({1, 2 + t, 0, 1.0f}, std::span<const float>(x).subspan(size_t(r * cols), size_t(2 + t)), {}, alone);
      for (int64_t c = 0; c < 2 + t; ++c) EXPECT_NEAR(y[size_t(r * cols + c)], alone[size_t(c)], 1e-6);
    }
  }
}

// Shift invariance in exact arithmetic; no overflow for any finite z (max subtracted): scores of
// 1e4 and a scale of -64.
TEST(softmax, LargeScoresDoNotOverflow) {
  for (Fn f : kTiers) {
    std::vector<float> y(3);
    f({1, 3, 0, 1.0f}, std::vector<float>{1e4f, 1e4f, 1e4f - 1000}, {}, y);
    EXPECT_NEAR(y[0], 0.5, 1e-7);
    EXPECT_NEAR(y[1], 0.5, 1e-7);
    EXPECT_EQ(y[2], 0.0f);
    f({1, 3, 0, -64.0f}, std::vector<float>{-2, 1, 3}, {}, y);
    EXPECT_EQ(y[0], 1.0f);
    EXPECT_EQ(y[2], 0.0f);
  }
}

// The rule of ops/softmax.h: a row of -inf gives NaN (exp(-inf - -inf)); the other rows are
// untouched; NaN in x reaches its whole row only.
TEST(softmax, FullyMaskedRowIsNaNAndNaNStaysInItsRow) {
  const std::vector<float> x{1, 2, 3, 1, 2, 3}, mask{-kInf, -kInf, -kInf, 0, 0, 0};
  const std::vector<float> xn{1, std::numeric_limits<float>::quiet_NaN(), 3, 1, 2, 3};
  for (Fn f : kTiers) {
    std::vector<float> y(6);
    f({2, 3, 2, 1.0f}, x, mask, y);
    for (int c = 0; c < 3; ++c) EXPECT_TRUE(std::isnan(y[c])) << c;
    for (int c = 3; c < 6; ++c) EXPECT_FALSE(std::isnan(y[c])) << c;
    f({2, 3, 0, 1.0f}, xn, {}, y);
    for (int c = 0; c < 3; ++c) EXPECT_TRUE(std::isnan(y[c])) << c;
    for (int c = 3; c < 6; ++c) EXPECT_FALSE(std::isnan(y[c])) << c;
  }
}

TEST(softmax, InPlace) {
  Rng rng(3);
  const int64_t rows = 64, cols = 4099;  // large enough for the fast tier's threads
  const std::vector<float> x = rng.normal_vec(rows * cols, 16.0);
  for (Fn f : kTiers) {
    std::vector<float> y(x.size()), x2 = x;
    f({rows, cols, 0, 0.125f}, x, {}, y);
    f({rows, cols, 0, 0.125f}, x2, {}, x2);
    EXPECT_EQ(x2, y);
  }
}

TEST(softmax, BadArguments) {
  std::vector<float> x(8), m(4), y(8), m3(3);
  test::expect_error([&] { softmax_ref<double>({2, 4, 1, 1.0f}, x, m3, y); },
                     "softmax: mask has 3 elements, expected 4");
  test::expect_error([&] { softmax_fast({3, 4, 0, 1.0f}, x, {}, y); }, "softmax: x has 8 elements, expected 12");
  test::expect_error([&] { softmax_ref<float>({2, 0, 0, 1.0f}, {}, {}, {}); },
                     "softmax: rows=2 cols=0 mask_rows=0, expected rows >= 0, cols > 0, mask_rows >= 0");
  test::expect_error([&] { softmax_ref<float>({2, 4, 0, kInf}, x, {}, y); }, "softmax: scale=inf, expected finite");
  std::vector<float> big(9);
  test::expect_error([&] { softmax_fast({2, 4, 0, 1.0f}, std::span<const float>(big).first(8), {},
                                        std::span<float>(big).last(8)); },
                     "y partially overlaps x");
  test::expect_error([&] { softmax_fast({1, 4, 1, 1.0f}, std::span<const float>(x).first(4), std::span<const float>(y).first(4),
                                        std::span<float>(y).first(4)); },
                     "softmax: y overlaps mask");
  softmax_fast({0, 5, 0, 1.0f}, {}, {}, {});  // zero rows: a valid no-op
}

// The bound is not loose enough to pass a mask applied head-major (row r / heads instead of
// r % mask_rows): judged against the right truth, most rows of a causal prefill fail.
TEST(softmax, BoundCatchesAHeadMajorMask) {
  const SoftmaxParams p{4 * 7, 12, 7, 0.0625f};
  const SoftmaxInputs in = softmax_inputs(p, 9, {SoftmaxMask::Causal});
  std::vector<float> right(size_t(p.rows * p.cols)), wrong(right.size());
  softmax_ref<double>(p, in.x, in.mask, right);
  std::vector<float> mask_hm(size_t(p.rows * p.cols));
  for (int64_t r = 0; r < p.rows; ++r)
    for (int64_t c = 0; c < p.cols; ++c) mask_hm[size_t(r * p.cols + c)] = in.mask[size_t((r / 4) * p.cols + c)];
  softmax_ref<double>({p.rows, p.cols, p.rows, p.scale}, in.x, mask_hm, wrong);
  const std::vector<double> b = softmax_bound(p, in.x, in.mask, cpu_f32_model());
  int rows_off = 0;
  for (int64_t r = 0; r < p.rows; ++r) {
    bool off = false;
    for (int64_t c = 0; c < p.cols; ++c) {
      const size_t i = size_t(r * p.cols + c);
      off |= std::fabs(double(right[i]) - wrong[i]) > b[i];
    }
    rows_off += off;
  }
  EXPECT_GE(rows_off, 20);
}

TEST(softmax, ThreeWayAgreement) { test::expect_all_pass(softmax_check(1234, CheckScope::All)); }

}  // namespace
}  // namespace moe
