// Drift figures (oracle/drift.h) against values worked out independently: the KL divergence of a
// uniform base from a row with one raised logit in closed form, top-token agreement with ties,
// dp of the next token, non-finite rows, and size errors.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/check.h"
#include "oracle/drift.h"

namespace moe {
namespace {

// KL(uniform over V || softmax with logit 0 raised by d): -ln V - (1/V) sum_v ln q_v with
// ln q_0 = d - ln(e^d + V - 1), ln q_v = -ln(e^d + V - 1).
double closed_form(double d, int V) {
  const double lz = std::log(std::exp(d) + V - 1);
  return -std::log(double(V)) - (d - V * lz) / V;
}

TEST(Drift, KlOfAUniformBaseInClosedForm) {
  const int V = 1000;
  std::vector<float> base(3 * V, 0.0f), test(3 * V, 0.0f);
  const double ds[3] = {1e-3, 0.5, 8.0};
  for (int t = 0; t < 3; ++t) test[size_t(t * V + 7)] = float(ds[t]);
  const DriftStats s = drift_stats(base, test, 3, V, {});
  for (int t = 0; t < 3; ++t)
    EXPECT_NEAR(s.kld_per_row[size_t(t)], closed_form(double(float(ds[t])), V), 1e-12 * (1 + closed_form(ds[t], V))) << t;
  EXPECT_DOUBLE_EQ(s.kld_max, s.kld_per_row[2]);
  EXPECT_DOUBLE_EQ(s.kld_min, s.kld_per_row[0]);
  EXPECT_DOUBLE_EQ(s.kld_median, s.kld_per_row[1]);
  // The base's top token among equal logits is the first; the raised one is token 7.
  EXPECT_DOUBLE_EQ(s.same_top.mean, 0.0);
  EXPECT_EQ(s.first_top_change, 0);
  EXPECT_EQ(s.scored, 0);
}

TEST(Drift, SameTopDpAndPerplexityRatio) {
  // Two rows, vocabulary 3. Row 0 equal in both; row 1's test moves mass to token 2.
  const std::vector<float> base = {2, 1, 0, 0, 1, 0};
  const std::vector<float> test = {2, 1, 0, 0, 1, 3};
  const std::vector<int32_t> tokens = {0, 1, 1};  // row 0 predicts token 1, row 1 token 1
  const DriftStats s = drift_stats(base, test, 2, 3, tokens);
  EXPECT_EQ(s.kld_per_row[0], 0.0);
  EXPECT_DOUBLE_EQ(s.same_top.mean, 0.5);
  EXPECT_EQ(s.first_top_change, 1);
  ASSERT_EQ(s.scored, 2);
  const double pb = std::exp(1.0) / (2 + std::exp(1.0)), pt = std::exp(1.0) / (1 + std::exp(1.0) + std::exp(3.0));
  EXPECT_NEAR(s.dp_min, pt - pb, 1e-15);
  EXPECT_NEAR(s.dp.mean, (pt - pb) / 2, 1e-15);
  EXPECT_NEAR(s.ln_ppl_ratio.mean, (std::log(pb) - std::log(pt)) / 2, 1e-14);
  EXPECT_NEAR(s.dp_rms, std::sqrt((pt - pb) * (pt - pb) / 2), 1e-15);
}

TEST(Drift, NonFiniteRowsAndErrors) {
  const std::vector<float> base = {0, 1, 0, 1};
  std::vector<float> test = {0, 1, NAN, 1};
  const DriftStats s = drift_stats(base, test, 2, 2, {});
  EXPECT_EQ(s.nonfinite, 1);
  EXPECT_TRUE(std::isinf(s.kld_per_row[1]));
  EXPECT_EQ(s.kld.mean, s.kld_per_row[0]);
  // -inf logits are zero probabilities, in the test row too where the base's is zero as well.
  const std::vector<float> masked = {0, -INFINITY, 0, -INFINITY};
  EXPECT_EQ(drift_stats(masked, masked, 2, 2, {}).nonfinite, 0);
  EXPECT_THROW(drift_stats(base, std::vector<float>(3), 2, 2, {}), Error);
  EXPECT_THROW(drift_stats(std::vector<float>{NAN, 0}, std::vector<float>{0, 0}, 1, 2, {}), Error);
  EXPECT_THROW(drift_stats(base, base, 2, 2, std::vector<int32_t>{0, 9}), Error);  // a token past the vocabulary
}

}  // namespace
}  // namespace moe

namespace moe {
namespace {

// Rows whose test error grows with position: each window's mean and max follow it; a NaN row is
// an infinite error; bad sizes are refused.
TEST(drift, PositionDriftPerWindow) {
  const int64_t rows = 8, cols = 2;
  std::vector<float> base(rows * cols, 1.0f), test = base;
  for (int64_t r = 0; r < rows; ++r) test[size_t(r * cols)] = 1.0f + 0.01f * float(r);  // |d| = 0.01 r, |b| = sqrt 2
  const PositionDrift d = position_drift(base, test, rows, cols, 3);
  ASSERT_EQ(d.window_start, (std::vector<int64_t>{0, 2, 4}));
  EXPECT_NEAR(d.rel[5], 0.05f / std::sqrt(2.0), 1e-7);
  EXPECT_NEAR(d.window_max[2], d.rel[7], 0);
  EXPECT_NEAR(d.window_mean[1], (d.rel[2] + d.rel[3]) / 2, 1e-15);
  EXPECT_LT(d.window_mean[0], d.window_mean[1]);
  test[3] = NAN;
  EXPECT_TRUE(std::isinf(position_drift(base, test, rows, cols, 2).window_max[0]));
  EXPECT_THROW(position_drift(base, std::vector<float>(3), rows, cols, 2), Error);
  EXPECT_THROW(position_drift(base, test, rows, cols, 0), Error);
}

}  // namespace
}  // namespace moe
