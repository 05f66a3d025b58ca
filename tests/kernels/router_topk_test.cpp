#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>

#include "check/checks.h"
#include "core/rng.h"
#include "ops/router_topk.h"
#include "test_util.h"

namespace moe {
namespace {

using test::RouterOut;

// Runs tier 0 (f64 truth), 1 (f32) or 2 (fast).
RouterOut run(int tier, const RouterTopkParams& p, const std::vector<float>& logits) {
  RouterOut o(p.tokens * p.k);
  if (tier == 0) router_topk_ref<double>(p, logits, o.idx, o.w);
  if (tier == 1) router_topk_ref<float>(p, logits, o.idx, o.w);
  if (tier == 2) router_topk_fast(p, logits, o.idx, o.w);
  return o;
}

// Tolerance of the hand-computed weights below, for logits with |x - max| <= ~1.4: the error of
// the CPU tiers' own order (d = x - max rounded: u |d|; expf within 2u; the reciprocal of the sum
// and the product: u each): per probability a_e = u |d_e| + 3u <= 4.4u; renormalised
// a_e + a_max + gamma_K + 3u < 15u; unrenormalised a_e + eta + u < 15u (eta <= 3.4u + gamma_E + u).
// The spec's bound (spec/router_topk_spec.cpp: topk_row_errors, router_weight_bounds) is looser:
// it also covers a kernel's exp2(d log2 e), with 3u |d_e| + 4u per probability.
constexpr double kHandRel = 15 * kU32;

TEST(router_topk, HandComputed) {
  // logits = log([1, 2, 3, 4]) -> p = [0.1, 0.2, 0.3, 0.4]; top-2 = experts 3, 2; renormalised
  // w = [4/7, 3/7]; without renormalisation w = [0.4, 0.3].
  const std::vector<float> x{0.0f, float(std::log(2.0)), float(std::log(3.0)), float(std::log(4.0))};
  for (int tier = 0; tier < 3; ++tier) {
    const RouterOut o = run(tier, {1, 4, 2, true}, x);
    EXPECT_EQ(o.idx, (std::vector<int32_t>{3, 2})) << "tier " << tier;
    EXPECT_NEAR(o.w[0], 4.0 / 7.0, kHandRel * 4 / 7) << "tier " << tier;
    EXPECT_NEAR(o.w[1], 3.0 / 7.0, kHandRel * 3 / 7) << "tier " << tier;
    const RouterOut raw = run(tier, {1, 4, 2, false}, x);
    EXPECT_EQ(raw.idx, (std::vector<int32_t>{3, 2})) << "tier " << tier;
    EXPECT_NEAR(raw.w[0], 0.4, kHandRel * 0.4) << "tier " << tier;
    EXPECT_NEAR(raw.w[1], 0.3, kHandRel * 0.3) << "tier " << tier;
  }
}

TEST(router_topk, ExactTiesGoToTheLowestIndex) {
  for (int tier = 0; tier < 3; ++tier) {
    // Three equal best logits, K = 2: experts 1 and 2, equal weights 1/2.
    RouterOut o = run(tier, {1, 5, 2, true}, {1, 3, 3, 0, 3});
    EXPECT_EQ(o.idx, (std::vector<int32_t>{1, 2})) << "tier " << tier;
    EXPECT_EQ(o.w[0], o.w[1]) << "tier " << tier;  // equal p, so bit-equal weights
    // p * (1 / (p + p)): 2p is exact, the reciprocal and the product round: |w - 1/2| <= u.
    EXPECT_NEAR(o.w[0], 0.5, kU32) << "tier " << tier;
    // p = [a, a, b > a], K = 2: the engines' first-smallest-slot scan would keep expert 1;
    // the contract is the lowest index, expert 0, with the same weight.
    o = run(tier, {1, 3, 2, true}, {0, 0, 1});
    EXPECT_EQ(o.idx, (std::vector<int32_t>{2, 0})) << "tier " << tier;
    const double w0 = std::exp(1.0) / (1 + std::exp(1.0));
    EXPECT_NEAR(o.w[0], w0, kHandRel * w0) << "tier " << tier;
    // All equal: the first K experts, weights 1/K, ascending index.
    o = run(tier, {1, 8, 3, true}, std::vector<float>(8, 0.25f));
    EXPECT_EQ(o.idx, (std::vector<int32_t>{0, 1, 2})) << "tier " << tier;
    // p * (1 / (p + p + p)): the sum rounds once (2p is exact), the reciprocal and the product
    // once each: |w - 1/3| <= 3u / 3.
    for (float v : o.w) EXPECT_NEAR(v, 1.0 / 3.0, kU32) << "tier " << tier;
  }
}

TEST(router_topk, TiesOnAGridAtRealShapeLowestIndexWins) {
  // Logits on a coarse grid: many exact ties at the K-th place. Every tier must return the
  // K best probabilities with the lowest indices among equals, whatever the tier's rounding
  // (equal logits give bit-equal probabilities in every tier).
  Rng rng(21);
  const RouterTopkParams p{32, 512, 10, true};
  std::vector<float> x = rng.normal_vec(p.tokens * p.experts, 1.0);
  for (auto& v : x) v = std::round(v * 2.0f) / 2.0f;
  for (int tier = 0; tier < 3; ++tier) {
    const RouterOut o = run(tier, p, x);
    for (int64_t t = 0; t < p.tokens; ++t) {
      const float* row = x.data() + t * p.experts;
      std::vector<int32_t> want(p.experts);
      std::iota(want.begin(), want.end(), 0);
      std::stable_sort(want.begin(), want.end(), [&](int32_t a, int32_t b) { return row[a] > row[b]; });
      want.resize(p.k);
      std::vector<int32_t> got(o.idx.begin() + t * p.k, o.idx.begin() + (t + 1) * p.k);
      EXPECT_EQ(got, want) << "tier " << tier << " token " << t;
    }
  }
}

// CPU-C's router written out as the engine does it (cpu_softmax: docs/ops/README.md "Scalar helpers";
// cpu_topk: docs/ops/moe.md "Softmax router"):
// the f32 tier's weights must equal these bit for bit, aligned by expert id.
void engine_router(const float* x, int E, int K, int32_t* idx, float* w) {
  std::vector<float> p(x, x + E);
  float m = p[0];
  for (int i = 1; i < E; ++i) {
    if (p[i] > m) m = p[i];
  }
  float sum = 0;
  for (int i = 0; i < E; ++i) {
    p[i] = std::exp(p[i] - m);
    sum += p[i];
  }
  const float inv = 1.0f / sum;
  for (int i = 0; i < E; ++i) p[i] *= inv;
  std::vector<float> val(K, -1e30f);
  std::fill(idx, idx + K, 0);
  for (int i = 0; i < E; ++i) {
    int s = 0;
    for (int j = 1; j < K; ++j) {
      if (val[j] < val[s]) s = j;
    }
    if (p[i] > val[s]) val[s] = p[i], idx[s] = i;
  }
  float vs = 0;
  for (int j = 0; j < K; ++j) vs += val[j];
  const float vinv = 1.0f / vs;
  for (int j = 0; j < K; ++j) w[j] = val[j] * vinv;
}

TEST(router_topk, F32TierWeightsBitExactWithEngineSlotOrder) {
  Rng rng(9);
  for (auto [E, K] : {std::pair{512, 10}, std::pair{256, 8}, std::pair{512, 4}, std::pair{67, 13}}) {
    const RouterTopkParams p{16, E, K, true};
    const std::vector<float> x = rng.normal_vec(p.tokens * E, 2.0);
    const RouterOut o = run(1, p, x);
    for (int64_t t = 0; t < p.tokens; ++t) {
      std::vector<int32_t> ei(K);
      std::vector<float> ew(K);
      engine_router(x.data() + t * E, E, K, ei.data(), ew.data());
      for (int j = 0; j < K; ++j) {
        const int64_t at = std::find(o.idx.begin() + t * K, o.idx.begin() + (t + 1) * K, ei[j]) - o.idx.begin();
        ASSERT_LT(at, (t + 1) * K) << "expert " << ei[j] << " missing, E " << E << " token " << t;
        EXPECT_EQ(o.w[at], ew[j]) << "E " << E << " token " << t << " expert " << ei[j];
      }
    }
  }
}

TEST(router_topk, Invariants) {
  // Distinct in-range ids, output sorted by (w desc, id asc), w = the renormalised top
  // probabilities summing to 1 within a few ulp per term; K = E returns every expert.
  Rng rng(4);
  for (auto [E, K] : {std::pair{512, 10}, std::pair{256, 8}, std::pair{33, 33}, std::pair{1, 1}, std::pair{67, 1}}) {
    const RouterTopkParams p{8, E, K, true};
    const std::vector<float> x = rng.normal_vec(p.tokens * E, 2.0);
    for (int tier = 0; tier < 3; ++tier) {
      const RouterOut o = run(tier, p, x);
      for (int64_t t = 0; t < p.tokens; ++t) {
        const int32_t* it = o.idx.data() + t * K;
        const float* wt = o.w.data() + t * K;
        std::set<int32_t> ids(it, it + K);
        EXPECT_EQ(int64_t(ids.size()), K);
        double sum = 0;
        for (int j = 0; j < K; ++j) {
          EXPECT_GE(it[j], 0);
          EXPECT_LT(it[j], E);
          EXPECT_GT(wt[j], 0.0f);
          if (j > 0) {
            EXPECT_TRUE(wt[j - 1] > wt[j] || (wt[j - 1] == wt[j] && it[j - 1] < it[j]));
          }
          sum += wt[j];
        }
        // Each weight is within 6u |d|max + gamma_K + 11u relative of exact (the spec's bound
        // under cpu_f32_model(), spec/router_topk_spec.cpp), |d| <= ~16 for N(0, 2) logits and
        // K <= 33: |sum - 1| <= ~8e-6; 1e-5 leaves room.
        EXPECT_NEAR(sum, 1.0, 1e-5) << "tier " << tier << " E " << E << " K " << K;
      }
    }
  }
}

TEST(router_topk, NonFiniteLogitsGiveANanRowNotAnExpert) {
  // Token 0: a NaN logit; token 1: +inf; token 2: all -inf; token 3: some -inf (valid: those
  // experts have p = 0); token 4: ordinary. Only tokens 0-2 become (idx -1, w NaN).
  const int64_t E = 6, K = 2;
  std::vector<float> x{1, 2, test::kNan, 0, 1, 3,  /**/ 1, test::kInf, 0, 0, 0, 0,  /**/ -test::kInf, -test::kInf, -test::kInf, -test::kInf, -test::kInf, -test::kInf,
                       -test::kInf, 1, -test::kInf, 2, -test::kInf, -test::kInf,  /**/ 0, 1, 2, 3, 4, 5};
  for (int tier = 0; tier < 3; ++tier) {
    const RouterOut o = run(tier, {5, E, K, true}, x);
    for (int t = 0; t < 3; ++t) {
      for (int j = 0; j < K; ++j) {
        EXPECT_EQ(o.idx[t * K + j], -1) << "tier " << tier << " token " << t;
        EXPECT_TRUE(std::isnan(o.w[t * K + j])) << "tier " << tier << " token " << t;
      }
    }
    EXPECT_EQ(o.idx[3 * K], 3) << "tier " << tier;
    EXPECT_EQ(o.idx[3 * K + 1], 1) << "tier " << tier;
    const double w3 = std::exp(1.0) / (1 + std::exp(1.0));
    EXPECT_NEAR(o.w[3 * K], w3, kHandRel * w3) << "tier " << tier;
    EXPECT_EQ(o.idx[4 * K], 5) << "tier " << tier;
    EXPECT_EQ(o.idx[4 * K + 1], 4) << "tier " << tier;
  }
}

TEST(router_topk, SelectionConsistencyHelper) {
  // Values 0.5, 0.3, 0.3000001, 0.1 known to +-1e-6: {0, 1} and {0, 2} are both legitimate
  // top-2 sets; {0, 3} is not; {1, 2} (dropping the clear winner) is not.
  const std::vector<double> v{0.5, 0.3, 0.3000001, 0.1}, b(4, 1e-6);
  const std::vector<int32_t> all{0, 1, 2, 3};
  auto ok = [&](std::vector<int32_t> chosen) { return router::selection_consistent(chosen, all, v, b); };
  EXPECT_TRUE(ok({0, 2}));
  EXPECT_TRUE(ok({1, 0}));
  EXPECT_FALSE(ok({0, 3}));
  EXPECT_FALSE(ok({1, 2}));
  EXPECT_FALSE(ok({0, 0}));
  EXPECT_FALSE(ok({0, -1}));
  // With a tighter bound the swap is no longer allowed.
  EXPECT_FALSE(router::selection_consistent(std::vector<int32_t>{0, 1}, all, v, std::vector<double>(4, 1e-8)));
}

TEST(router_topk, ZeroTokensIsANoOp) {
  std::vector<int32_t> idx;
  std::vector<float> w;
  router_topk_ref<double>({0, 8, 2, true}, std::vector<float>{}, idx, w);
  router_topk_fast({0, 8, 2, true}, std::vector<float>{}, idx, w);
}

TEST(router_topk, BadArguments) {
  std::vector<float> x(8), w(4);
  std::vector<int32_t> idx(4);
  test::expect_error([&] { router_topk_ref<double>({1, 8, 9, true}, x, idx, w); },
                     "router_topk: k=9 out of range [1, 8] (experts=8)");
  test::expect_error([&] { router_topk_fast({1, 8, 0, true}, x, idx, w); }, "router_topk: k=0 out of range");
  test::expect_error([&] { router_topk_ref<float>({2, 8, 2, true}, x, idx, w); },
                     "router_topk: logits has 8 elements, expected 16");
  test::expect_error([&] { router_topk_fast({1, 8, 2, true}, x, idx, w); }, "router_topk: idx has 4 elements, expected 2");
  std::vector<int32_t> idx2(2);
  test::expect_error([&] { router_topk_fast({1, 8, 2, true}, x, idx2, w); }, "router_topk: w has 4 elements, expected 2");
  test::expect_error([&] { router_topk_fast({1, 0, 1, true}, x, idx, w); }, "router_topk: experts=0");
}

TEST(router_topk, ThreeWayAgreement) { test::expect_all_pass(router_topk_check(1234, CheckScope::All)); }

}  // namespace
}  // namespace moe
