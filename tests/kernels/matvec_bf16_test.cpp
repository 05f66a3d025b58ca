#include "ops/matvec_bf16.h"

#include <cmath>
#include <limits>

#include "check/checks.h"
#include "core/check_util.h"
#include "core/math.h"
#include "core/rng.h"
#include "test_util.h"

namespace moe {
namespace {

void run_tier(int tier, const MatvecBf16Params& p, std::span<const bf16> W, std::span<const float> x,
              std::span<float> y) {
  if (tier == 0) matvec_bf16_ref<double>(p, W, x, y);
  if (tier == 1) matvec_bf16_ref<float>(p, W, x, y);
  if (tier == 2) matvec_bf16_fast(p, W, x, y);
}

std::vector<bf16> to_bf16(const std::vector<float>& v) {
  std::vector<bf16> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = f32_to_bf16_rne(v[i]);
  return out;
}

TEST(matvec_bf16, RefIndependentOfThreadCount) {
  // Above kRefThreadTerms the reference spreads rows over threads, each row summed by one thread
  // in column order: the same bits with 1 or all threads, in both its tiers.
  const MatvecBf16Params p{1027, 1024};
  ASSERT_GE(p.rows * p.cols, kRefThreadTerms);
  const std::vector<bf16> W = to_bf16(Rng(25).activations(size_t(p.rows * p.cols)));
  const std::vector<float> x = Rng(26).activations(size_t(p.cols));
  for (int tier = 0; tier < 2; ++tier) {
    SCOPED_TRACE(test::kTierNames[tier]);
    test::expect_thread_count_invariant(size_t(p.rows), [&](std::vector<float>& y) { run_tier(tier, p, W, x, y); });
  }
}

TEST(matvec_bf16, HandComputed) {
  // [[1, 2, 3], [-1, 0.5, 0.25]] . [1, 2, 3] = [14, -1 + 1 + 0.75] (all exact).
  const std::vector<bf16> W = to_bf16({1, 2, 3, -1, 0.5f, 0.25f});
  const std::vector<float> x{1, 2, 3};
  for (int tier = 0; tier < 3; ++tier) {
    std::vector<float> y(2);
    run_tier(tier, {2, 3}, W, x, y);
    EXPECT_EQ(y[0], 14.0f) << "tier " << tier;
    EXPECT_EQ(y[1], 0.75f) << "tier " << tier;
  }
  // Weights are bf16: 1 + 2^-8 is not representable and was rounded (ties to even) to 1.
  std::vector<float> y(1);
  matvec_bf16_ref<double>({1, 1}, to_bf16({1.0f + 0x1p-8f}), std::vector<float>{3.0f}, y);
  EXPECT_EQ(y[0], 3.0f);
}

TEST(matvec_bf16, F32TierMatchesEngineOrderBitExact) {
  // The f32 tier is CPU-R's loop: acc = fma(w, x, acc) over c ascending. The same data summed
  // without fusion differs on some row, so this test tells the two apart.
  Rng rng(17);
  const int64_t rows = 64, cols = 257;
  const std::vector<bf16> W = rng.bf16_normal_vec(rows * cols, 0.1);
  const std::vector<float> x = rng.activations(cols);
  std::vector<float> y(rows);
  matvec_bf16_ref<float>({rows, cols}, W, x, y);
  int unfused_differs = 0;
  for (int64_t r = 0; r < rows; ++r) {
    float acc = 0.0f, plain = 0.0f;
    for (int64_t c = 0; c < cols; ++c) {
      acc = std::fma(bf16_to_f32(W[r * cols + c]), x[c], acc);
      volatile float prod = bf16_to_f32(W[r * cols + c]) * x[c];
      plain = plain + prod;
    }
    EXPECT_EQ(y[r], acc) << r;
    unfused_differs += plain != acc;
  }
  EXPECT_GT(unfused_differs, 0);
}

TEST(matvec_bf16, CancellationIsHandledByTheBound) {
  // 2^24 + 1 - 2^24 in index order: the f32 fma chain loses the 1 (2^24 + 1 rounds to even 2^24),
  // the f64 truth keeps it. The check's bound gamma_3 * (2^24 + 1 + 2^24) covers that loss.
  const std::vector<bf16> W = to_bf16({1, 1, -1});
  const std::vector<float> x{0x1p24f, 1.0f, 0x1p24f};
  std::vector<float> t(1), f(1);
  matvec_bf16_ref<double>({1, 3}, W, x, t);
  matvec_bf16_ref<float>({1, 3}, W, x, f);
  EXPECT_EQ(t[0], 1.0f);
  EXPECT_EQ(f[0], 0.0f);
  EXPECT_LE(std::fabs(f[0] - t[0]), gamma_n(3) * (0x1p25 + 1) + kU32 * 1.0);
}

TEST(matvec_bf16, NanPropagation) {
  Rng rng(2);
  const int64_t rows = 5, cols = 40;
  std::vector<bf16> W = rng.bf16_normal_vec(rows * cols, 0.2);
  std::vector<float> x = rng.activations(cols), y(rows);
  W[2 * cols + 37] = 0x7FC0;  // NaN weight in row 2 (in the fast tier's tail past 32)
  for (int tier = 0; tier < 3; ++tier) {
    run_tier(tier, {rows, cols}, W, x, y);
    for (int64_t r = 0; r < rows; ++r) EXPECT_EQ(std::isnan(y[r]), r == 2) << "tier " << tier << " r " << r;
  }
  W[2 * cols + 37] = 0;  // a zero weight against a NaN input still gives NaN: every row
  x[5] = std::numeric_limits<float>::quiet_NaN();
  W[1 * cols + 5] = 0;
  for (int tier = 0; tier < 3; ++tier) {
    run_tier(tier, {rows, cols}, W, x, y);
    for (int64_t r = 0; r < rows; ++r) EXPECT_TRUE(std::isnan(y[r])) << "tier " << tier << " r " << r;
  }
}

TEST(matvec_bf16, ZeroRows) {
  std::vector<float> x(8, 1.0f), y;
  for (int tier = 0; tier < 3; ++tier) run_tier(tier, {0, 8}, std::vector<bf16>{}, x, y);
}

TEST(matvec_bf16, BadArguments) {
  std::vector<bf16> W(12);
  std::vector<float> x(4), y(3), buf(8);
  test::expect_error([&] { matvec_bf16_ref<double>({3, 4}, std::vector<bf16>(11), x, y); },
                     "matvec_bf16: W has 11 elements, expected 12");
  test::expect_error([&] { matvec_bf16_ref<float>({3, 4}, W, std::vector<float>(5), y); },
                     "matvec_bf16: x has 5 elements, expected 4");
  test::expect_error([&] { matvec_bf16_fast({3, 4}, W, x, std::span<float>(y).first(2)); },
                     "matvec_bf16: y has 2 elements, expected 3");
  test::expect_error([&] { matvec_bf16_fast({3, 0}, W, x, y); }, "matvec_bf16: rows=3 cols=0");
  test::expect_error([&] { matvec_bf16_fast({3, 4}, W, std::span<const float>(buf).first(4), std::span<float>(buf).subspan(2, 3)); },
                     "matvec_bf16: y overlaps x");
}

TEST(matvec_bf16, ThreeWayAgreement) { test::expect_all_pass(matvec_bf16_check(1234, CheckScope::All)); }

TEST(matvec_bf16, EverySimdTarget) {
  // Each target the CPU offers: one-hot x reads each weight exactly (every lane and the scalar
  // tail, cols 67 = 4 x 16 + 3), NaN in the vector body and in the tail, the three-way check.
  test::each_simd_target([] {
    Rng rng(7);
    const int64_t rows = 3, cols = 67;
    const std::vector<bf16> W = rng.bf16_normal_vec(rows * cols, 0.5);
    std::vector<float> y(rows);
    for (int64_t c = 0; c < cols; ++c) {
      std::vector<float> x(cols, 0.0f);
      x[c] = 1.0f;
      matvec_bf16_fast({rows, cols}, W, x, y);
      for (int64_t r = 0; r < rows; ++r) ASSERT_EQ(y[r], bf16_to_f32(W[r * cols + c])) << "r " << r << " c " << c;
    }
    for (int64_t c : {int64_t(5), cols - 1}) {
      std::vector<float> x = rng.activations(cols);
      x[c] = std::numeric_limits<float>::quiet_NaN();
      matvec_bf16_fast({rows, cols}, W, x, y);
      for (float v : y) EXPECT_TRUE(std::isnan(v)) << "NaN at " << c;
    }
    test::expect_all_pass(matvec_bf16_check(99, CheckScope::All));
  });
}

}  // namespace
}  // namespace moe
