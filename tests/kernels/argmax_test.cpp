#include <cmath>
#include <limits>

#include "check/checks.h"
#include "core/rng.h"
#include "ops/argmax.h"
#include "test_util.h"

namespace moe {
namespace {

using test::kInf;
using test::kNan;

// Runs all three tiers on x and returns their answers.
std::vector<std::vector<int32_t>> all_tiers(const ArgmaxParams& p, const std::vector<float>& x) {
  std::vector<std::vector<int32_t>> out(3, std::vector<int32_t>(p.rows, -7));
  argmax_ref<double>(p, x, out[0]);
  argmax_ref<float>(p, x, out[1]);
  argmax_fast(p, x, out[2]);
  return out;
}

void expect_rows(const ArgmaxParams& p, const std::vector<float>& x, const std::vector<int32_t>& want) {
  const auto got = all_tiers(p, x);
  for (int tier = 0; tier < 3; ++tier) EXPECT_EQ(got[tier], want) << "tier " << tier;
}

TEST(argmax, HandComputed) {
  expect_rows({3, 4}, {1, 5, 2, 3,  /**/ -1, -3, -0.5f, -2,  /**/ 7, 0, 0, 0}, {1, 2, 0});
  expect_rows({1, 1}, {-2}, {0});
}

TEST(argmax, ExactTiesGoToTheLowestIndex) {
  expect_rows({2, 5}, {1, 4, 2, 4, 4,  /**/ 3, 3, 3, 3, 3}, {1, 0});
  // -0.0 and +0.0 compare equal: the first zero wins whatever its sign.
  expect_rows({2, 3}, {-1, -0.0f, 0.0f,  /**/ -5, 0.0f, -0.0f}, {1, 1});
}

TEST(argmax, InfinitiesAreOrdinaryValues) {
  expect_rows({3, 3}, {1, kInf, kInf,  /**/ -kInf, -kInf, -kInf,  /**/ -kInf, -1e30f, 0}, {1, 0, 2});
}

TEST(argmax, NanCountsAsTheMaximumFirstNanWins) {
  // numpy.argmax([1, nan, 5, nan]) == 1; a NaN beats +inf; a NaN in front wins at once.
  expect_rows({4, 4}, {1, kNan, 5, kNan,  /**/ kInf, 2, kNan, 3,  /**/ kNan, 9, 9, kNan,  /**/ 1, 2, 3, 4},
              {1, 2, 0, 3});
}

TEST(argmax, FirstMaximumOfALargeRowWithPlantedTies) {
  // The maximum planted three times far apart; the first copy (past the vector body) wins.
  Rng rng(11);
  std::vector<float> x = rng.normal_vec(248320, 2.0);
  x[200003] = x[100001] = x[248319] = 50.0f;
  expect_rows({1, 248320}, x, {100001});
}

TEST(argmax, ResultIsAMaximumAndFirst) {
  // Invariant on random tie-heavy rows: x[idx] >= every x, and no earlier x equals it.
  Rng rng(5);
  const ArgmaxParams p{16, 333};
  std::vector<float> x = rng.normal_vec(p.rows * p.n, 2.0);
  for (auto& v : x) v = std::round(v);
  const auto got = all_tiers(p, x);
  for (int tier = 0; tier < 3; ++tier) {
    for (int64_t r = 0; r < p.rows; ++r) {
      const float* row = x.data() + r * p.n;
      const int32_t i = got[tier][r];
      ASSERT_GE(i, 0);
      ASSERT_LT(i, p.n);
      for (int64_t j = 0; j < p.n; ++j) EXPECT_GE(row[i], row[j]) << "tier " << tier;
      for (int64_t j = 0; j < i; ++j) EXPECT_LT(row[j], row[i]) << "tier " << tier;
    }
  }
}

TEST(argmax, ZeroRowsIsANoOp) {
  std::vector<int32_t> idx;
  argmax_fast({0, 8}, std::vector<float>{}, idx);
  argmax_ref<double>({0, 8}, std::vector<float>{}, idx);
}

TEST(argmax, BadArguments) {
  std::vector<float> x(10);
  std::vector<int32_t> idx(2);
  test::expect_error([&] { argmax_ref<double>({2, 0}, x, idx); }, "argmax: rows=2 n=0");
  test::expect_error([&] { argmax_ref<float>({2, 4}, x, idx); }, "argmax: x has 10 elements, expected 8");
  std::vector<int32_t> idx3(3);
  test::expect_error([&] { argmax_fast({2, 5}, x, idx3); }, "argmax: idx has 3 elements, expected 2");
  test::expect_error([&] { argmax_fast({-1, 5}, x, idx); }, "rows=-1");
}

TEST(argmax, ThreeWayAgreement) { test::expect_all_pass(argmax_check(1234, CheckScope::All)); }

}  // namespace
}  // namespace moe
