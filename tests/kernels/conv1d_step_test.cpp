#include <cmath>
#include <cstring>
#include <limits>

#include "check/checks.h"
#include "core/math.h"
#include "core/rng.h"
#include "ops/conv1d_step.h"
#include "test_util.h"

namespace moe {
namespace {

using Fn = void (*)(const Conv1dStepParams&, std::span<const float>, std::span<const float>, std::span<float>,
                    std::span<float>);
const Fn kTiers[3] = {&conv1d_step_ref<double>, &conv1d_step_ref<float>, &conv1d_step_fast};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(conv1d_step, HandComputed) {
  // C = 2, K = 4. state slots (oldest first) per channel: c0 = [1, 2, 3], c1 = [-1, 0, 2];
  // w c0 = [0.5, 0.25, -1, 2], c1 = [1, 1, 1, 1]; x = [0.5, -3].
  // acc c0 = 0.5 + 0.5 - 3 + 1 = -1; acc c1 = -1 + 0 + 2 - 3 = -2.
  const std::vector<float> x{0.5f, -3.0f}, w{0.5f, 0.25f, -1.0f, 2.0f, 1, 1, 1, 1};
  for (int tier = 0; tier < 3; ++tier) {
    std::vector<float> state{1, -1, 2, 0, 3, 2}, y(2);
    kTiers[tier]({1, 2, 4}, x, w, state, y);
    EXPECT_NEAR(y[0], -1.0 / (1.0 + std::exp(1.0)), 1e-7) << "tier " << tier;
    EXPECT_NEAR(y[1], -2.0 / (1.0 + std::exp(2.0)), 1e-7) << "tier " << tier;
    EXPECT_EQ(state, (std::vector<float>{2, 0, 3, 2, 0.5f, -3.0f})) << "tier " << tier;
  }
}

TEST(conv1d_step, F32TierMatchesEngineOrderBitExact) {
  // CPU-R: acc = fma(S0, w0, 0) -> fma(S1, w1, .) -> fma(S2, w2, .) -> fma(x, w3, .), silu in f32.
  const int64_t C = 37;
  Rng rng(11);
  const std::vector<float> x = rng.activations(C), w = rng.normal_vec(4 * C, 0.3);
  std::vector<float> state = rng.activations(3 * C), y(C);
  const std::vector<float> s0 = state;
  conv1d_step_ref<float>({1, C, 4}, x, w, state, y);
  for (int64_t c = 0; c < C; ++c) {
    float acc = std::fma(s0[c], w[c * 4 + 0], 0.0f);
    acc = std::fma(s0[C + c], w[c * 4 + 1], acc);
    acc = std::fma(s0[2 * C + c], w[c * 4 + 2], acc);
    acc = std::fma(x[c], w[c * 4 + 3], acc);
    const float e = std::exp(-acc);
    const float den = 1.0f + e;
    EXPECT_EQ(y[c], acc / den) << c;
  }
}

TEST(conv1d_step, TTokensEqualSingleStepsBitExact) {
  const int64_t C = 1500, T = 7;
  Rng rng(12);
  const std::vector<float> x = rng.activations(T * C), w = rng.normal_vec(4 * C, 0.3), s0 = rng.activations(3 * C);
  for (int tier = 0; tier < 3; ++tier) {
    std::vector<float> sa = s0, ya(T * C);
    kTiers[tier]({T, C, 4}, x, w, sa, ya);
    std::vector<float> sb = s0, yb(T * C), y1(C);
    for (int64_t t = 0; t < T; ++t) {
      kTiers[tier]({1, C, 4}, std::span<const float>(x).subspan(t * C, C), w, sb, y1);
      std::copy(y1.begin(), y1.end(), yb.begin() + t * C);
    }
    EXPECT_TRUE(same_bits(ya, yb)) << "tier " << tier;
    EXPECT_TRUE(same_bits(sa, sb)) << "tier " << tier;
    // In place (y = x) gives the same bits.
    std::vector<float> sc = s0, xy = x;
    kTiers[tier]({T, C, 4}, xy, w, sc, xy);
    EXPECT_TRUE(same_bits(xy, ya)) << "tier " << tier;
    EXPECT_TRUE(same_bits(sc, sa)) << "tier " << tier;
  }
}

TEST(conv1d_step, StateHoldsLastInputsExactly) {
  const int64_t C = 33, T = 5;
  Rng rng(13);
  const std::vector<float> x = rng.activations(T * C), w = rng.normal_vec(4 * C, 0.3);
  for (int tier = 0; tier < 3; ++tier) {
    std::vector<float> state(3 * C, 0.0f), y(T * C);
    kTiers[tier]({T, C, 4}, x, w, state, y);
    // Slot j holds token T-3+j.
    EXPECT_TRUE(same_bits(state, std::vector<float>(x.begin() + (T - 3) * C, x.end()))) << "tier " << tier;
  }
}

TEST(conv1d_step, ZeroStateIsLeftZeroPadding) {
  // From a zero state the first token sees only its own tap: y = silu(x * w3).
  const int64_t C = 9;
  Rng rng(14);
  const std::vector<float> x = rng.activations(C), w = rng.normal_vec(4 * C, 0.3);
  std::vector<float> state(3 * C, 0.0f), y(C);
  conv1d_step_ref<float>({1, C, 4}, x, w, state, y);
  for (int64_t c = 0; c < C; ++c) EXPECT_EQ(y[c], silu<float>(x[c] * w[c * 4 + 3])) << c;
}

TEST(conv1d_step, NanStaysInItsChannelForKTokens) {
  // A NaN input of channel 2 at token 0 reaches y of channel 2 at tokens 0..3 (it sits in the
  // state for K-1 = 3 more tokens), then leaves; other channels never see it.
  const int64_t C = 5, T = 6;
  std::vector<float> x(T * C, 0.5f), w(4 * C, 0.25f);
  x[2] = std::numeric_limits<float>::quiet_NaN();
  for (int tier = 0; tier < 3; ++tier) {
    std::vector<float> state(3 * C, 0.0f), y(T * C);
    kTiers[tier]({T, C, 4}, x, w, state, y);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t c = 0; c < C; ++c)
        EXPECT_EQ(std::isnan(y[t * C + c]), c == 2 && t < 4) << "tier " << tier << " t " << t << " c " << c;
    for (float s : state) EXPECT_FALSE(std::isnan(s)) << "tier " << tier;
  }
}

TEST(conv1d_step, SiluExpOverflowGivesSignedZeroNotNan) {
  // acc = -100: expf(100) = inf in f32, so the engines' division form gives -0; the truth keeps
  // -100 e^-100 (a subnormal f32 after rounding). Large positive acc gives acc itself.
  const std::vector<float> w{0, 0, 0, 1, 0, 0, 0, 1}, x{-100.0f, 100.0f};
  std::vector<float> s32(6, 0.0f), s64(6, 0.0f), sf(6, 0.0f), y32(2), y64(2), yf(2);
  conv1d_step_ref<float>({1, 2, 4}, x, w, s32, y32);
  conv1d_step_ref<double>({1, 2, 4}, x, w, s64, y64);
  conv1d_step_fast({1, 2, 4}, x, w, sf, yf);
  EXPECT_EQ(y32[0], 0.0f);
  EXPECT_TRUE(std::signbit(y32[0]));
  EXPECT_EQ(y64[0], float(-100.0 * std::exp(-100.0) / (1.0 + std::exp(-100.0))));
  EXPECT_LE(std::fabs(yf[0]), 1e-40f);
  EXPECT_FALSE(std::isnan(yf[0]));
  EXPECT_EQ(y32[1], 100.0f);
  EXPECT_EQ(y64[1], 100.0f);
  EXPECT_EQ(yf[1], 100.0f);
}

TEST(conv1d_step, BadArguments) {
  std::vector<float> x(10), w(20), state(15), y(10);
  test::expect_error([&] { conv1d_step_ref<double>({2, 5, 4}, x, std::vector<float>(19), state, y); },
                     "conv1d_step: w has 19 elements, expected 20");
  std::vector<float> short_state(12);
  test::expect_error([&] { conv1d_step_fast({2, 5, 4}, x, w, short_state, y); },
                     "conv1d_step: state has 12 elements, expected 15");
  test::expect_error([&] { conv1d_step_ref<float>({3, 5, 4}, x, w, state, y); },
                     "conv1d_step: x has 10 elements, expected 15");
  test::expect_error([&] { conv1d_step_ref<float>({2, 0, 4}, x, w, state, y); }, "channels=0");
  test::expect_error([&] { conv1d_step_fast({2, 5, 0}, x, w, state, y); }, "kernel=0");
  std::vector<float> big(25);
  test::expect_error(
      [&] { conv1d_step_fast({2, 5, 4}, x, w, std::span<float>(big).subspan(0, 15), std::span<float>(big).subspan(10, 10)); },
      "y overlaps state");
  std::vector<float> xy(15);
  test::expect_error(
      [&] { conv1d_step_ref<float>({2, 5, 4}, std::span<const float>(xy).subspan(0, 10), w, state, std::span<float>(xy).subspan(5, 10)); },
      "y overlaps x without being the same buffer");
}

TEST(conv1d_step, ThreeWayAgreement) { test::expect_all_pass(conv1d_step_check(1234, CheckScope::All)); }

}  // namespace
}  // namespace moe
