#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "check/checks.h"
#include "core/rng.h"
#include "ops/router_noaux.h"
#include "test_util.h"

namespace moe {
namespace {

using test::RouterOut;

// Runs tier 0 (f64 truth), 1 (f32) or 2 (fast).
RouterOut run(int tier, const RouterNoauxParams& p, const std::vector<float>& logits, const std::vector<float>& bias) {
  RouterOut o(p.tokens * p.k);
  if (tier == 0) router_noaux_ref<double>(p, logits, bias, o.idx, o.w);
  if (tier == 1) router_noaux_ref<float>(p, logits, bias, o.idx, o.w);
  if (tier == 2) router_noaux_fast(p, logits, bias, o.idx, o.w);
  return o;
}

double sig(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// Tolerance of hand-computed renormalised weights: the spec's bound under cpu_f32_model()
// (spec/router_noaux_spec.cpp: errors, router_weight_bounds): 4u per s, twice, gamma_K and 2u for
// the division and the scaling: 10u + gamma_K relative, < 16u for K <= 4.
constexpr double kHandRel = 16 * kU32;

TEST(router_noaux, HandComputedNegativeBiasMasksWithMinusInf) {
  // 16 experts in 4 groups of 4, keep 2 groups, K = 4, scale 2.5, bias -0.9 everywhere.
  // c = sigmoid(x) - 0.9: group 0 [3, 2, -5, -5] -> c ~ [0.053, -0.019, -0.893, -0.893],
  // G0 ~ 0.033; group 1 [1, 1, -5, -5] -> c ~ -0.169 twice, G1 ~ -0.338; group 2 all -1 ->
  // G2 ~ -1.262; group 3 [0, -3, -3, -3] -> G3 ~ -1.253. Kept: groups 0 and 1. Top-4 of c over
  // experts 0..7: 0, 1, then the tie 4 = 5 in index order.
  // With the 0.0 masking of mlx-lm / old HF the dropped experts 8..15 would score 0 > -0.019 and
  // the answer would be {0, 8, 9, 10}; with -inf (ours, HF 5.17, official) it is {0, 1, 4, 5}.
  const std::vector<float> x{3, 2, -5, -5, 1, 1, -5, -5, -1, -1, -1, -1, 0, -3, -3, -3};
  const std::vector<float> bias(16, -0.9f);
  const RouterNoauxParams p{1, 16, 4, 4, 2, 2.5f, true};
  const double sum = sig(3) + sig(2) + 2 * sig(1);
  for (int tier = 0; tier < 3; ++tier) {
    const RouterOut o = run(tier, p, x, bias);
    EXPECT_EQ(o.idx, (std::vector<int32_t>{0, 1, 4, 5})) << "tier " << tier;
    EXPECT_NE(o.idx, (std::vector<int32_t>{0, 8, 9, 10})) << "tier " << tier;
    EXPECT_NEAR(o.w[0], 2.5 * sig(3) / sum, kHandRel * 2.5 * sig(3) / sum) << "tier " << tier;
    EXPECT_NEAR(o.w[1], 2.5 * sig(2) / sum, kHandRel * 2.5 * sig(2) / sum) << "tier " << tier;
    EXPECT_NEAR(o.w[2], 2.5 * sig(1) / sum, kHandRel * 2.5 * sig(1) / sum) << "tier " << tier;
    EXPECT_EQ(o.w[2], o.w[3]) << "tier " << tier;
    // Unrenormalised: w = s * scale.
    const RouterOut raw = run(tier, {1, 16, 4, 4, 2, 2.5f, false}, x, bias);
    // s * scale: 4u (sigmoid) + u (scale) + u (the truth's rounding) = 6u relative.
    EXPECT_NEAR(raw.w[0], 2.5 * sig(3), 6 * kU32 * 2.5 * sig(3)) << "tier " << tier;
  }
}

TEST(router_noaux, GroupScoreDecidesBeforeExpertScore) {
  // 4 groups of 2, keep 1, K = 2, bias 0. Group 0 [5, -5] holds the best expert but scores
  // ~0.993 + 0.007 = 1.0; group 1 [1, 1] scores ~1.462: experts 2 and 3 (tied, index order).
  const std::vector<float> x{5, -5, 1, 1, -2, -2, -2, -2}, bias(8, 0.0f);
  for (int tier = 0; tier < 3; ++tier) {
    const RouterOut o = run(tier, {1, 8, 2, 4, 1, 2.5f, true}, x, bias);
    EXPECT_EQ(o.idx, (std::vector<int32_t>{2, 3})) << "tier " << tier;
    EXPECT_EQ(o.w[0], o.w[1]) << "tier " << tier;
    EXPECT_EQ(o.w[0], 1.25f) << "tier " << tier;  // s / (s + s) = 0.5 exactly, times 2.5 exact
  }
}

TEST(router_noaux, ExactTiesGoToTheLowerGroupAndExpert) {
  // All equal: group 0 of 2 kept, then experts 0, 1 in order. The bias breaks a tie for
  // selection only: bias[3] = 0.5 makes group 1 win and expert 3 first, but w uses s alone.
  const std::vector<float> x(6, 0.0f);
  for (int tier = 0; tier < 3; ++tier) {
    RouterOut o = run(tier, {1, 6, 2, 3, 1, 1.0f, true}, x, std::vector<float>(6, 0.0f));
    EXPECT_EQ(o.idx, (std::vector<int32_t>{0, 1})) << "tier " << tier;
    EXPECT_EQ(o.w[0], 0.5f) << "tier " << tier;  // s / (2 s) with s = 0.5 exactly
    o = run(tier, {1, 6, 2, 3, 1, 1.0f, true}, x, {0, 0, 0, 0.5f, 0, 0});
    EXPECT_EQ(o.idx, (std::vector<int32_t>{3, 2})) << "tier " << tier;
    EXPECT_EQ(o.w[0], 0.5f) << "tier " << tier;
  }
}

TEST(router_noaux, InvariantsAtDeepSeekShape) {
  // Distinct ids in range, from at most topk_group groups, sum of w = scaling factor, and (in
  // the truth) output order = descending c = sigmoid(x) + bias, ties by ascending id.
  Rng rng(8);
  const RouterNoauxParams p{32, 256, 8, 8, 4, 2.5f, true};
  const std::vector<float> x = rng.normal_vec(p.tokens * p.experts, 1.5), bias = rng.uniform_vec(256, -0.1f, 0.1f);
  for (int tier = 0; tier < 3; ++tier) {
    const RouterOut o = run(tier, p, x, bias);
    for (int64_t t = 0; t < p.tokens; ++t) {
      const int32_t* it = o.idx.data() + t * p.k;
      const float* wt = o.w.data() + t * p.k;
      std::set<int32_t> ids(it, it + p.k), groups;
      EXPECT_EQ(int64_t(ids.size()), p.k);
      double sum = 0;
      for (int64_t j = 0; j < p.k; ++j) {
        ASSERT_GE(it[j], 0);
        ASSERT_LT(it[j], 256);
        groups.insert(it[j] / 32);
        EXPECT_GT(wt[j], 0.0f);
        sum += wt[j];
        if (tier == 0 && j > 0) {
          const double c0 = sig(x[t * 256 + it[j - 1]]) + bias[it[j - 1]];
          const double c1 = sig(x[t * 256 + it[j]]) + bias[it[j]];
          EXPECT_TRUE(c0 > c1 || (c0 == c1 && it[j - 1] < it[j]));
        }
      }
      EXPECT_LE(int64_t(groups.size()), p.topk_group);
      // 8 weights each within (10u + gamma_8) = 18u relative (the spec's bound under
      // cpu_f32_model(), as kHandRel above), summed in f64: |sum - 2.5| <= 18u * 2.5 ~ 2.7e-6 < 5e-6.
      EXPECT_NEAR(sum, 2.5, 5e-6) << "tier " << tier << " token " << t;
    }
  }
}

TEST(router_noaux, F32TierFollowsHfFp32Order) {
  // The f32 tier's weights equal, bit for bit, the fp32 loop written out here: s = 1/(1+expf(-x)),
  // sum of the chosen s in output order, (s / sum) * scale.
  Rng rng(12);
  const RouterNoauxParams p{16, 256, 8, 8, 4, 2.5f, true};
  const std::vector<float> x = rng.normal_vec(p.tokens * p.experts, 1.5), bias = rng.uniform_vec(256, -0.1f, 0.1f);
  const RouterOut o = run(1, p, x, bias);
  for (int64_t t = 0; t < p.tokens; ++t) {
    float sum = 0;
    for (int64_t j = 0; j < p.k; ++j) sum += 1.0f / (1.0f + std::exp(-x[t * 256 + o.idx[t * p.k + j]]));
    for (int64_t j = 0; j < p.k; ++j) {
      const float s = 1.0f / (1.0f + std::exp(-x[t * 256 + o.idx[t * p.k + j]]));
      const float q = s / sum;
      EXPECT_EQ(o.w[t * p.k + j], q * 2.5f) << "token " << t << " slot " << j;
    }
  }
}

TEST(router_noaux, NanLogitGivesANanRowInfinitiesAreOrdinary) {
  // Token 0: a NaN logit -> (idx -1, w NaN). Token 1: +inf / -inf logits (s = 1 / 0) route
  // normally. Token 2: all -inf -> every s = 0, the chosen sum is 0, the weights are 0 (as HF's
  // +1e-20 gives), chosen by bias alone.
  const std::vector<float> x{0, 1, test::kNan, 2,  /**/ test::kInf, -test::kInf, 0, 1,  /**/ -test::kInf, -test::kInf, -test::kInf, -test::kInf};
  const std::vector<float> bias{0.1f, 0.2f, 0.3f, 0.0f};
  for (int tier = 0; tier < 3; ++tier) {
    const RouterOut o = run(tier, {3, 4, 2, 2, 2, 2.5f, true}, x, bias);
    for (int j = 0; j < 2; ++j) {
      EXPECT_EQ(o.idx[j], -1) << "tier " << tier;
      EXPECT_TRUE(std::isnan(o.w[j])) << "tier " << tier;
    }
    EXPECT_EQ(o.idx[2], 0) << "tier " << tier;  // c = 1.1
    EXPECT_EQ(o.idx[3], 2) << "tier " << tier;  // c = sigmoid(0) + 0.3 = 0.8 > sigmoid(1) ~ 0.731
    // s = 1 and 0.5 exactly, so the sum 1.5 is exact; the division and the scaling round: 2u.
    EXPECT_NEAR(o.w[2], 2.5 / 1.5, 2 * kU32 * 2.5 / 1.5) << "tier " << tier;
    EXPECT_EQ(o.idx[4], 2) << "tier " << tier;  // c = bias: 0.3, then 0.2
    EXPECT_EQ(o.idx[5], 1) << "tier " << tier;
    EXPECT_EQ(o.w[4], 0.0f) << "tier " << tier;
    EXPECT_EQ(o.w[5], 0.0f) << "tier " << tier;
  }
}

TEST(router_noaux, ZeroTokensIsANoOp) {
  std::vector<int32_t> idx;
  std::vector<float> w;
  router_noaux_ref<float>({0, 16, 4, 4, 2, 2.5f, true}, std::vector<float>{}, std::vector<float>(16), idx, w);
  router_noaux_fast({0, 16, 4, 4, 2, 2.5f, true}, std::vector<float>{}, std::vector<float>(16), idx, w);
}

TEST(router_noaux, BadArguments) {
  std::vector<float> x(16), bias(16), w(4);
  std::vector<int32_t> idx(4);
  test::expect_error([&] { router_noaux_ref<double>({1, 16, 4, 3, 1, 1.0f, true}, x, bias, idx, w); },
                     "router_noaux: experts=16 not divisible by n_group=3");
  test::expect_error([&] { router_noaux_ref<float>({1, 16, 4, 4, 5, 1.0f, true}, x, bias, idx, w); },
                     "router_noaux: topk_group=5 out of range [1, 4] (n_group)");
  test::expect_error([&] { router_noaux_fast({1, 16, 4, 4, 0, 1.0f, true}, x, bias, idx, w); },
                     "router_noaux: topk_group=0 out of range");
  std::vector<float> w9(9);
  std::vector<int32_t> idx9(9);
  test::expect_error([&] { router_noaux_fast({1, 16, 9, 4, 2, 1.0f, true}, x, bias, idx9, w9); },
                     "router_noaux: k=9 out of range [1, 8] (topk_group * experts / n_group)");
  std::vector<float> w17(17);
  std::vector<int32_t> idx17(17);
  test::expect_error([&] { router_noaux_fast({1, 16, 17, 1, 1, 1.0f, true}, x, bias, idx17, w17); },
                     "router_noaux: k=17 out of range [1, 16]");
  test::expect_error([&] { router_noaux_ref<double>({1, 16, 4, 16, 4, 1.0f, true}, x, bias, idx, w); },
                     "router_noaux: experts/n_group=1, expected >= 2");
  test::expect_error([&] { router_noaux_ref<double>({1, 16, 4, 4, 2, 1.0f, true}, x, std::vector<float>(15), idx, w); },
                     "router_noaux: bias has 15 elements, expected 16");
  std::vector<float> bad_bias(16, 0.0f);
  bad_bias[3] = test::kNan;
  test::expect_error([&] { router_noaux_fast({1, 16, 4, 4, 2, 1.0f, true}, x, bad_bias, idx, w); },
                     "router_noaux: bias[3]=nan, expected finite");
  test::expect_error([&] { router_noaux_fast({1, 16, 4, 4, 2, test::kInf, true}, x, bias, idx, w); },
                     "router_noaux: routed_scaling_factor=inf, expected finite");
  test::expect_error([&] { router_noaux_fast({2, 16, 4, 4, 2, 1.0f, true}, x, bias, idx, w); },
                     "router_noaux: logits has 16 elements, expected 32");
}

TEST(router_noaux, ThreeWayAgreement) { test::expect_all_pass(router_noaux_check(1234, CheckScope::All)); }

}  // namespace
}  // namespace moe
