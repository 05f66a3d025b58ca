#include <cmath>
#include <limits>

#include "check/checks.h"
#include "core/math.h"
#include "core/rng.h"
#include "ops/moe_combine.h"
#include "test_util.h"

namespace moe {
namespace {

using Fn = void (*)(const MoeCombineParams&, std::span<const float>, std::span<const float>, std::span<const float>,
                    std::span<const float>, std::span<const float>, std::span<float>);
const Fn kTiers[3] = {&moe_combine_ref<double>, &moe_combine_ref<float>, &moe_combine_fast};

TEST(moe_combine, HandComputed) {
  // T = 1, d = 2, K = 2: h = [1, 2], e0 = [4, 8], e1 = [2, -2], w = [0.75, 0.25],
  // sh = [2, 4], gamma = 0 (sigmoid 1/2): out = h + [3.5, 5.5] + [1, 2] = [5.5, 9.5].
  const std::vector<float> h{1, 2}, e{4, 8, 2, -2}, w{0.75f, 0.25f}, sh{2, 4}, gamma{0};
  for (int tier = 0; tier < 3; ++tier) {
    std::vector<float> out(2);
    kTiers[tier]({1, 2, 2, true}, h, e, w, sh, gamma, out);
    EXPECT_EQ(out, (std::vector<float>{5.5f, 9.5f})) << "tier " << tier;
    // Ungated (DeepSeek-V3): sh added as is, gamma ignored and may be empty.
    kTiers[tier]({1, 2, 2, false}, h, e, w, sh, {}, out);
    EXPECT_EQ(out, (std::vector<float>{6.5f, 11.5f})) << "tier " << tier;
  }
}

TEST(moe_combine, F32TierIsTheEngineLoop) {
  Rng rng(3);
  const int64_t T = 2, d = 129, K = 10;
  const std::vector<float> h = rng.activations(T * d), e = rng.normal_vec(T * K * d, 1.0),
                           w = rng.uniform_vec(T * K, 0, 0.2f), sh = rng.normal_vec(T * d, 1.0),
                           gamma = rng.normal_vec(T, 2.0);
  std::vector<float> out(T * d);
  moe_combine_ref<float>({T, d, K, true}, h, e, w, sh, gamma, out);
  for (int64_t t = 0; t < T; ++t) {
    const float den = 1.0f + std::exp(-gamma[t]);
    const float sig = 1.0f / den;
    for (int64_t i = 0; i < d; ++i) {
      float moe = 0;
      for (int64_t k = 0; k < K; ++k) moe = std::fma(w[t * K + k], e[(t * K + k) * d + i], moe);
      const float shg = sh[t * d + i] * sig;
      const float hm = h[t * d + i] + moe;
      EXPECT_EQ(out[t * d + i], hm + shg) << t << ' ' << i;
    }
  }
}

TEST(moe_combine, SlotOrderChangesOnlyRounding) {
  // Permuting the slots (VK sorted vs CPU-C running-min order,
  // docs/ops/verification.md "Top-K slot order") moves the result by at most the reordering of
  // K + 2 terms: 2 gamma(K+1) sum|terms|.
  Rng rng(4);
  const int64_t d = 512, K = 8;
  const std::vector<float> h = rng.activations(d), e = rng.normal_vec(K * d, 1.0), w = rng.uniform_vec(K, 0, 0.25f),
                           sh = rng.normal_vec(d, 1.0), gamma{0.3f};
  std::vector<float> er(K * d), wr(K), a(d), b(d);
  for (int64_t k = 0; k < K; ++k) {
    wr[k] = w[K - 1 - k];
    std::copy(e.begin() + (K - 1 - k) * d, e.begin() + (K - k) * d, er.begin() + k * d);
  }
  moe_combine_ref<float>({1, d, K, true}, h, e, w, sh, gamma, a);
  moe_combine_ref<float>({1, d, K, true}, h, er, wr, sh, gamma, b);
  for (int64_t i = 0; i < d; ++i) {
    double terms = std::fabs(h[i]) + std::fabs(sh[i]) + std::fabs(a[i]);
    for (int64_t k = 0; k < K; ++k) terms += std::fabs(double(w[k]) * e[k * d + i]);
    EXPECT_LE(std::fabs(double(a[i]) - b[i]), 2 * gamma_n(double(K + 2)) * terms) << i;
  }
}

TEST(moe_combine, InPlaceOnHmid) {
  Rng rng(5);
  std::vector<float> h = rng.activations(3 * 64), e = rng.normal_vec(3 * 4 * 64, 1.0), w = rng.uniform_vec(12, 0, 1),
                     sh = rng.normal_vec(3 * 64, 1.0), gamma = rng.normal_vec(3, 1.0), out(3 * 64);
  for (int tier = 0; tier < 3; ++tier) {
    std::vector<float> hh = h;
    kTiers[tier]({3, 64, 4, true}, h, e, w, sh, gamma, out);
    kTiers[tier]({3, 64, 4, true}, hh, e, w, sh, gamma, hh);
    EXPECT_EQ(hh, out) << "tier " << tier;
  }
}

TEST(moe_combine, NanPropagates) {
  // A NaN in one expert's output reaches its token even with routing weight 0 (0 * NaN); a NaN
  // gate logit poisons only its own token.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> h(2 * 4, 1.0f), e(2 * 2 * 4, 1.0f), w{0.5f, 0.0f, 0.5f, 0.5f}, sh(8, 1.0f), gamma{0, 0};
  e[(0 * 2 + 1) * 4 + 2] = nan;  // token 0, slot 1 (weight 0), element 2
  for (int tier = 0; tier < 3; ++tier) {
    std::vector<float> out(8);
    kTiers[tier]({2, 4, 2, true}, h, e, w, sh, gamma, out);
    for (int i = 0; i < 8; ++i) EXPECT_EQ(std::isnan(out[i]), i == 2) << "tier " << tier << " i " << i;
    std::vector<float> g2{0, nan};
    std::vector<float> e2(16, 1.0f);
    kTiers[tier]({2, 4, 2, true}, h, e2, w, sh, g2, out);
    for (int i = 0; i < 8; ++i) EXPECT_EQ(std::isnan(out[i]), i >= 4) << "tier " << tier << " i " << i;
  }
}

TEST(moe_combine, BadArguments) {
  std::vector<float> h(8), e(16), w(4), sh(8), gamma(2), out(8);
  test::expect_error([&] { moe_combine_ref<double>({2, 4, 2, true}, h, std::vector<float>(15), w, sh, gamma, out); },
                     "moe_combine: e has 15 elements, expected 16");
  test::expect_error([&] { moe_combine_fast({2, 4, 2, true}, h, e, std::vector<float>(3), sh, gamma, out); },
                     "moe_combine: w has 3 elements, expected 4");
  test::expect_error([&] { moe_combine_ref<float>({2, 4, 2, true}, h, e, w, sh, {}, out); },
                     "moe_combine: gamma has 0 elements, expected 2");
  test::expect_error([&] { moe_combine_ref<float>({2, 4, 2, false}, h, e, w, sh, std::vector<float>(5), out); },
                     "moe_combine: gamma has 5 elements, expected 2");
  std::vector<float> small(7);
  test::expect_error([&] { moe_combine_fast({2, 4, 2, true}, h, e, w, sh, gamma, small); },
                     "moe_combine: out has 7 elements, expected 8");
  test::expect_error([&] { moe_combine_fast({2, 0, 2, true}, h, e, w, sh, gamma, out); }, "dim=0");
  test::expect_error([&] { moe_combine_fast({2, 4, -1, true}, h, e, w, sh, gamma, out); }, "k=-1");
}

TEST(moe_combine, ThreeWayAgreement) { test::expect_all_pass(moe_combine_check(1234, CheckScope::All)); }

}  // namespace
}  // namespace moe
