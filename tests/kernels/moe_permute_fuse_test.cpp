#include <cmath>
#include <limits>
#include <string>

#include "check/checks.h"
#include "core/rng.h"
#include "ops/moe_combine.h"
#include "ops/moe_permute_fuse.h"
#include "ops/swiglu_expert.h"
#include "test_util.h"

namespace moe {
namespace {

using Fn = void (*)(const MoePermuteFuseParams&, const ExpertBuckets&, std::span<const ExpertWeights>,
                    std::span<const float>, std::span<float>);
const Fn kTiers[3] = {&moe_permute_fuse_ref<double>, &moe_permute_fuse_ref<float>, &moe_permute_fuse_fast};
using ExpertFn = void (*)(const SwigluExpertParams&, const ExpertWeights&, std::span<const float>, std::span<float>);
const ExpertFn kExpertTiers[3] = {&swiglu_expert_ref<double>, &swiglu_expert_ref<float>, &swiglu_expert_fast};

// A routed layer of E experts of which every id gets weights (E small), T tokens, K slots.
struct Layer {
  int64_t T, d, I, E, K;
  std::vector<ExpertStorage> store;
  std::vector<ExpertWeights> experts;
  std::vector<int32_t> idx;
  std::vector<float> w, x, out0;
  ExpertBuckets b;
  MoePermuteFuseParams params() const { return {T, d, I, 4, E}; }
};

Layer make_layer(uint64_t seed, int64_t T, int64_t d, int64_t I, int64_t E, int64_t K) {
  Layer L{T, d, I, E, K, {}, {}, {}, {}, {}, {}, {}};
  Rng rng(seed);
  for (int64_t e = 0; e < E; ++e) L.store.push_back(random_expert(rng.fork(100 + e), d, I, 4));
  for (const ExpertStorage& s : L.store) L.experts.push_back(s.view());
  Rng rr = rng.fork(1);
  for (int64_t t = 0; t < T; ++t) {
    const int64_t start = rr.below(E);  // K consecutive ids mod E, slots rotated
    for (int64_t k = 0; k < K; ++k) L.idx.push_back(int32_t((start + (k + K / 2) % K) % E));
    float s = 0;
    for (int64_t k = 0; k < K; ++k) L.w.push_back(rr.uniform(0.05f, 1.0f)), s += L.w.back();
    for (int64_t k = 0; k < K; ++k) L.w[t * K + k] /= s;
  }
  L.x = rng.fork(2).activations(T * d);
  L.out0 = rng.fork(3).normal_vec(T * d, 1.0);
  expert_buckets_ref<double>({T, K, E}, L.idx, L.w, L.b);
  return L;
}

TEST(moe_permute_fuse, EqualsPerTokenPathUpToSummationOrder) {
  // The invariant: per tier, the bucketed sum equals the per-token path
  // out0 + sum_k w_k expert_k(x_t) accumulated in slot order with the same expert tier. Both
  // sum the same K + 1 terms (every e_k is bit-identical: same function, same input), each with
  // fma steps, so each is within gamma(K) sum|terms| of the exact sum of those terms and they
  // differ by at most 2 gamma(K) sum|terms|. (f64 tier: the same with u64 and one f32 store each.)
  const Layer L = make_layer(5, 6, 128, 64, 7, 5);
  for (int tier = 0; tier < 3; ++tier) {
    std::vector<float> fused = L.out0;
    kTiers[tier](L.params(), L.b, L.experts, L.x, fused);
    for (int64_t t = 0; t < L.T; ++t) {
      std::vector<double> acc(L.out0.begin() + t * L.d, L.out0.begin() + (t + 1) * L.d), terms(L.d);
      std::vector<float> acc32(L.out0.begin() + t * L.d, L.out0.begin() + (t + 1) * L.d), e(L.d);
      for (int64_t i = 0; i < L.d; ++i) terms[i] = std::fabs(acc[i]);
      for (int64_t k = 0; k < L.K; ++k) {
        kExpertTiers[tier]({1, L.d, L.I, 4}, L.experts[L.idx[t * L.K + k]], std::span(L.x).subspan(t * L.d, L.d), e);
        const float wk = L.w[t * L.K + k];
        for (int64_t i = 0; i < L.d; ++i) {
          acc[i] = std::fma(double(wk), double(e[i]), acc[i]);
          acc32[i] = std::fma(wk, e[i], acc32[i]);
          terms[i] += std::fabs(double(wk) * e[i]);
        }
      }
      for (int64_t i = 0; i < L.d; ++i) {
        const double slot_order = tier == 0 ? acc[i] : acc32[i];
        const double bound = tier == 0 ? 2 * kU32 * std::fabs(acc[i]) + 2 * gamma_n(double(L.K), 0x1.0p-53) * terms[i]
                                       : 2 * gamma_n(double(L.K)) * terms[i];
        EXPECT_LE(std::fabs(double(fused[t * L.d + i]) - slot_order), bound + kMinNormal32)
            << "tier " << tier << " token " << t << " i " << i;
      }
    }
  }
}

TEST(moe_permute_fuse, PrefillFlowEqualsPerTokenCombine) {
  // MFR's prefill flow: permute-fuse into a zeroed buffer, then MoeCombineResidualNTokens
  // (moe_combine with the routed sum as one slot of weight 1: fma(1, m, 0) = m exactly). The
  // decode flow: moe_combine over the K slot outputs. Same K + 2 terms (h, w_k e_k, sh sig) in
  // two orders, each within gamma(K+2) sum|terms| of their exact sum (the shared-expert term is
  // bit-identical in both): they differ by at most 2 gamma(K+2) sum|terms|.
  const Layer L = make_layer(10, 4, 128, 64, 6, 4);
  Rng rng(11);
  const std::vector<float> h = rng.activations(L.T * L.d), sh = rng.normal_vec(L.T * L.d, 1.0),
                           gamma = rng.normal_vec(L.T, 2.0), ones(L.T, 1.0f);
  std::vector<float> routed(L.T * L.d, 0.0f), bucketed(L.T * L.d), e(L.T * L.K * L.d), per_token(L.T * L.d);
  moe_permute_fuse_ref<float>(L.params(), L.b, L.experts, L.x, routed);
  moe_combine_ref<float>({L.T, L.d, 1, true}, h, routed, ones, sh, gamma, bucketed);
  for (int64_t t = 0; t < L.T; ++t)
    for (int64_t k = 0; k < L.K; ++k)
      swiglu_expert_ref<float>({1, L.d, L.I, 4}, L.experts[L.idx[t * L.K + k]], std::span(L.x).subspan(t * L.d, L.d),
                               std::span(e).subspan((t * L.K + k) * L.d, L.d));
  moe_combine_ref<float>({L.T, L.d, L.K, true}, h, e, L.w, sh, gamma, per_token);
  for (int64_t t = 0; t < L.T; ++t) {
    const double sig = 1.0 / (1.0 + std::exp(-double(gamma[t])));
    for (int64_t i = 0; i < L.d; ++i) {
      double terms = std::fabs(h[t * L.d + i]) + std::fabs(sh[t * L.d + i]) * sig * (1 + 8 * kU32);
      for (int64_t k = 0; k < L.K; ++k) terms += std::fabs(double(L.w[t * L.K + k]) * e[(t * L.K + k) * L.d + i]);
      EXPECT_LE(std::fabs(double(bucketed[t * L.d + i]) - per_token[t * L.d + i]),
                2 * gamma_n(double(L.K + 2)) * terms + kMinNormal32)
          << "token " << t << " i " << i;
    }
  }
}

TEST(moe_permute_fuse, SingleExpertPerTokenIsBitExactWithPerTokenPath) {
  // K = 1: one fma per token in either order, so the two paths agree exactly.
  const Layer L = make_layer(6, 5, 64, 64, 3, 1);
  for (int tier = 1; tier < 3; ++tier) {
    std::vector<float> fused = L.out0, e(L.d);
    kTiers[tier](L.params(), L.b, L.experts, L.x, fused);
    for (int64_t t = 0; t < L.T; ++t) {
      kExpertTiers[tier]({1, L.d, L.I, 4}, L.experts[L.idx[t]], std::span(L.x).subspan(t * L.d, L.d), e);
      for (int64_t i = 0; i < L.d; ++i)
        EXPECT_EQ(fused[t * L.d + i], std::fma(L.w[t], e[i], L.out0[t * L.d + i])) << tier << ' ' << t << ' ' << i;
    }
  }
}

TEST(moe_permute_fuse, AccumulatesIntoOut) {
  // out is accumulated into, not overwritten: with every routing weight 0 a pre-seeded out
  // comes back unchanged (fma(e, 0, o) = o for finite e) in every tier. (The three-way check
  // runs on a pre-seeded out as well.)
  Layer L = make_layer(7, 3, 64, 64, 4, 2);
  for (float& w : L.b.weights) w = 0.0f;
  for (int tier = 0; tier < 3; ++tier) {
    std::vector<float> out = L.out0;
    kTiers[tier](L.params(), L.b, L.experts, L.x, out);
    EXPECT_EQ(out, L.out0) << "tier " << tier;  // fma(e, 0, o) = o for finite e
  }
}

TEST(moe_permute_fuse, NanReachesOnlyItsToken) {
  Layer L = make_layer(8, 4, 64, 64, 4, 2);
  L.x[2 * 64 + 5] = std::numeric_limits<float>::quiet_NaN();  // token 2
  for (int tier = 0; tier < 3; ++tier) {
    std::vector<float> out = L.out0;
    kTiers[tier](L.params(), L.b, L.experts, L.x, out);
    for (int64_t i = 0; i < L.T * L.d; ++i) EXPECT_EQ(std::isnan(out[i]), i / 64 == 2) << "tier " << tier << " i " << i;
  }
}

TEST(moe_permute_fuse, BadArguments) {
  const Layer L = make_layer(9, 3, 64, 64, 4, 2);
  const MoePermuteFuseParams p = L.params();
  std::vector<float> out = L.out0;
  auto broken = [&](auto&& edit, const std::string& needle) {
    ExpertBuckets b = L.b;
    edit(b);
    for (int tier = 0; tier < 3; ++tier) test::expect_error([&] { kTiers[tier](p, b, L.experts, L.x, out); }, needle);
  };
  // Empty bucket, inconsistent offsets, ids and tokens out of range.
  broken([](ExpertBuckets& b) { b.offsets[1] = b.offsets[0]; }, "moe_permute_fuse: bucket 0 (expert");
  broken([](ExpertBuckets& b) { b.offsets.back() -= 1; }, "moe_permute_fuse: buckets offsets[");
  broken([](ExpertBuckets& b) { std::swap(b.offsets[1], b.offsets[2]); }, "expected a non-empty, increasing range");
  broken([](ExpertBuckets& b) { b.expert_ids.back() = 4; }, "expert id 4 out of range [0, 4)");
  broken([](ExpertBuckets& b) { b.token_idx[0] = 3; }, "moe_permute_fuse: row 0 token 3 out of range [0, 3)");
  broken([](ExpertBuckets& b) { b.offsets.push_back(b.offsets.back()); }, "expert ids and");
  // Experts: wrong count, a routed expert without weights, the wrong bit width.
  std::vector<ExpertWeights> ex = L.experts;
  test::expect_error([&] { moe_permute_fuse_fast(p, L.b, std::span(ex).first(3), L.x, out); },
                     "moe_permute_fuse: experts has 3 elements, expected 4");
  ex[L.b.expert_ids[0]] = ExpertWeights{};
  test::expect_error([&] { moe_permute_fuse_ref<float>(p, L.b, ex, L.x, out); },
                     "moe_permute_fuse: experts[" + std::to_string(L.b.expert_ids[0]) + "].gate is [0, 0]");
  MoePermuteFuseParams p2 = p;
  p2.bits = 2;
  test::expect_error([&] { moe_permute_fuse_ref<double>(p2, L.b, L.experts, L.x, out); }, "bits=4, expected [64, 64] bits=2");
  // Sizes and aliasing.
  test::expect_error([&] { moe_permute_fuse_fast(p, L.b, L.experts, std::span(L.x).first(64), out); },
                     "moe_permute_fuse: x has 64 elements, expected 192");
  std::vector<float> same = L.x;
  test::expect_error([&] { moe_permute_fuse_fast(p, L.b, L.experts, same, same); }, "out overlaps x");
  MoePermuteFuseParams p3 = p;
  p3.tokens = 2;  // token 2 of the buckets is now out of range
  test::expect_error([&] { moe_permute_fuse_ref<float>(p3, L.b, L.experts, std::span(L.x).first(128), std::span(out).first(128)); },
                     "out of range [0, 2)");
}

TEST(moe_permute_fuse, ThreeWayAgreement) { test::expect_all_pass(moe_permute_fuse_check(1234, CheckScope::All)); }

}  // namespace
}  // namespace moe
