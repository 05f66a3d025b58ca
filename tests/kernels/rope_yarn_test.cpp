#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>

#include "check/checks.h"
#include "core/rng.h"
#include "ops/rope_yarn.h"
#include "test_util.h"

namespace moe {
namespace {

using Fn = void (*)(const RopeYarnParams&, std::span<const int64_t>, std::span<const float>, std::span<float>);
const Fn kTiers[3] = {&rope_yarn_ref<double>, &rope_yarn_ref<float>, &rope_yarn_fast};

bool bits_equal(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
}

// Cogito-V2 / DeepSeek-V3 (the params' defaults): R 64, theta 1e4, factor 40 over 4096, beta 32/1.
RopeYarnParams cogito(int64_t tokens, int64_t heads, bool interleaved = true) {
  RopeYarnParams p;
  p.tokens = tokens, p.heads = heads, p.interleaved = interleaved;
  return p;
}

// Each head's (x0, x1, x2, ...) -> (x0, x2, ..., x1, x3, ...): HF's view [R/2, 2] + transpose.
std::vector<float> deinterleave(std::span<const float> x, int64_t R) {
  std::vector<float> out(x.size());
  for (size_t base = 0; base < x.size(); base += R)
    for (int64_t i = 0; i < R / 2; ++i) out[base + i] = x[base + 2 * i], out[base + R / 2 + i] = x[base + 2 * i + 1];
  return out;
}

TEST(rope_yarn, CorrectionRangeCogito) {
  // corr(n) = 64 ln(4096 / (2 pi n)) / (2 ln 1e4): corr(32) = 10.472, corr(1) = 22.513.
  const YarnRange r = rope_yarn_range(cogito(1, 1));
  EXPECT_EQ(r.low, 10.0);
  EXPECT_EQ(r.high, 23.0);
}

TEST(rope_yarn, InverseFrequenciesHandComputed) {
  // Cogito: pf_i = 1e4^(i/32), extra = 1/pf, inter = extra/40, w_i = clamp((i - 10)/13, 0, 1).
  //   i = 0:  w 0,   inv = 1
  //   i = 5:  w 0,   inv = 1e4^(-5/32)                               = 0.23713737056616555
  //   i = 11: w 1/13, inv = extra (12/13 + 1/520)                    = 0.03900692656714386
  //   i = 16: w 6/13, pf = 100: inv = 0.00025 * 6/13 + 0.01 * 7/13   = 0.0055
  //   i = 22: w 12/13                                                = 0.0001778279410038922
  //   i = 31: w 1,   inv = 1 / (40 * 1e4^(31/32))                    = 3.33380358040831e-06
  const std::pair<int, double> want[] = {{0, 1.0},
                                         {5, 0.23713737056616555},
                                         {11, 0.03900692656714386},
                                         {16, 0.0055},
                                         {22, 0.0001778279410038922},
                                         {31, 3.33380358040831e-06}};
  for (const bool interleaved : {true, false}) {  // the table does not depend on the pairing
    const std::vector<double> inv64 = rope_yarn_inv_freq<double>(cogito(1, 1, interleaved));
    const std::vector<float> inv32 = rope_yarn_inv_freq<float>(cogito(1, 1, interleaved));
    ASSERT_EQ(inv64.size(), 32u);
    ASSERT_EQ(inv32.size(), 32u);
    for (const auto& [i, v] : want) {
      EXPECT_NEAR(inv64[i], v, 1e-15 * v) << i;
      // f32 (powf within 1 ULP, the reciprocals, the ramp weight and the blend, one rounding
      // each): within 6u inv + 3.01u extra; extra <= 10 inv here.
      EXPECT_NEAR(inv32[i], v, 40 * kU32 * v) << i;
    }
    EXPECT_EQ(inv32[0], 1.0f);  // powf(theta, 0) = 1, w = 0: exact
  }
}

TEST(rope_yarn, AttentionFactor) {
  // get_mscale(s, m) = 0.1 m ln s + 1 (s > 1). Cogito: mscale = mscale_all_dim = 1 -> exactly 1.
  RopeYarnParams p = cogito(1, 1);
  EXPECT_EQ(rope_yarn_attention_factor<double>(p), 1.0);
  EXPECT_EQ(rope_yarn_attention_factor<float>(p), 1.0f);
  const double g40 = 0.1 * std::log(40.0) + 1;  // 1.3688879454113936
  struct Case {
    float mscale, all_dim, factor;
    double want;
  };
  // HF: `if mscale and mscale_all_dim` -> ratio, else get_mscale(factor) with mscale 1 (so a
  // DeepSeek-V2-style mscale 0.707 without mscale_all_dim gives 1.3689, not 0.1*0.707 ln 40 + 1).
  for (const Case c : {Case{0.707f, 0.0f, 40.0f, g40}, Case{0.0f, 1.0f, 40.0f, g40},
                       Case{1.0f, 0.5f, 40.0f, g40 / (0.05 * std::log(40.0) + 1)},  // 1.1557219901962608
                       Case{1.0f, 0.0f, 1.0f, 1.0}, Case{3.0f, 1.0f, 0.5f, 1.0}}) {
    p.mscale = c.mscale, p.mscale_all_dim = c.all_dim, p.factor = c.factor;
    EXPECT_NEAR(rope_yarn_attention_factor<double>(p), c.want, 1e-15) << c.mscale << ' ' << c.all_dim;
    EXPECT_NEAR(rope_yarn_attention_factor<float>(p), c.want, 13 * kU32 * c.want) << c.mscale << ' ' << c.all_dim;
  }
}

TEST(rope_yarn, SingularRampGuard) {
  // beta_fast 1448, beta_slow 724: corr = -2.77 and -0.36 -> low = max(-3, 0) = 0, high =
  // ceil(-0.36) = 0: equal, so high = 0.001 and the ramp is 0 at i = 0 and 1 (clamped) beyond.
  RopeYarnParams p = cogito(1, 1);
  p.beta_fast = 1448.0f, p.beta_slow = 724.0f;
  const YarnRange r = rope_yarn_range(p);
  EXPECT_EQ(r.low, 0.0);
  EXPECT_DOUBLE_EQ(r.high, 0.001);
  const std::vector<double> inv = rope_yarn_inv_freq<double>(p);
  EXPECT_EQ(inv[0], 1.0);
  EXPECT_NEAR(inv[1], 0.018747355233311395, 1e-17);  // 1 / (40 * 1e4^(1/32))
}

TEST(rope_yarn, HandComputedSmall) {
  // R = 4, theta 100, factor 4 over L = 2048, beta 64 / 1, mscale 1 without mscale_all_dim.
  // corr(64) = 0.707 -> low 0; corr(1) = 2.513 -> ceil 3 = min(3, R - 1): high 3 (HF clamps to
  // R - 1, not to the ramp's last index 1). w = [0, 1/3]; pf = [1, 10]; inv = [1, 0.025/3 + 0.1
  // * 2/3 = 0.075]; m = 0.1 ln 4 + 1 = 1.138629436111989. Position 8: angles 8 and 0.6.
  // Interleaved pairs (x0, x1) -> (y0, y2), (x2, x3) -> (y1, y3), x = [1, 2, 3, 4]:
  //   y0 = m (1 cos 8 - 2 sin 8)   = -2.4186954663808318   y2 = m (1 sin 8 + 2 cos 8)   = 0.7951711795659735
  //   y1 = m (3 cos .6 - 4 sin .6) =  0.24758011307657485  y3 = m (3 sin .6 + 4 cos .6) = 5.687761326490999
  RopeYarnParams p;
  p.tokens = 1, p.heads = 1, p.rotary_dim = 4, p.theta = 100.0f, p.factor = 4.0f, p.original_max_position = 2048;
  p.beta_fast = 64.0f, p.beta_slow = 1.0f, p.mscale = 1.0f, p.mscale_all_dim = 0.0f;
  EXPECT_EQ(rope_yarn_range(p).high, 3.0);
  EXPECT_NEAR(rope_yarn_inv_freq<double>(p)[1], 0.075, 1e-16);
  const std::vector<int64_t> eight{8};
  for (Fn f : kTiers) {
    std::vector<float> y(4);
    f(p, eight, std::vector<float>{1, 2, 3, 4}, y);
    EXPECT_NEAR(y[0], -2.4186954663808318, 2e-6);
    EXPECT_NEAR(y[1], 0.24758011307657485, 2e-6);
    EXPECT_NEAR(y[2], 0.7951711795659735, 2e-6);
    EXPECT_NEAR(y[3], 5.687761326490999, 2e-6);
  }
}

TEST(rope_yarn, PositionZero) {
  // cos 0 = 1 and sin 0 = 0 exactly: y = fl(x0 m) - 0 on the output layout, in every tier (an
  // FMA gives the same single rounding). With m = 1 that is x itself (half-split) or the
  // de-interleaved x (interleaved); with m != 1, x * m_f in f32 and x * m rounded in the truth.
  Rng rng(2);
  const std::vector<float> x = rng.activations(3 * 128 * 64);
  const std::vector<int64_t> zeros(3, 0);
  const std::vector<float> de = deinterleave(x, 64);
  for (Fn f : kTiers) {
    std::vector<float> y(x.size());
    f(cogito(3, 128, false), zeros, x, y);
    EXPECT_TRUE(bits_equal(x, y));
    f(cogito(3, 128, true), zeros, x, y);
    EXPECT_TRUE(bits_equal(de, y));
  }
  RopeYarnParams p = cogito(3, 128, false);
  p.mscale_all_dim = 0.0f;  // m = 0.1 ln 40 + 1
  const float m32 = rope_yarn_attention_factor<float>(p);
  const double m64 = rope_yarn_attention_factor<double>(p);
  for (int tier = 0; tier < 3; ++tier) {
    std::vector<float> y(x.size());
    kTiers[tier](p, zeros, x, y);
    for (size_t j = 0; j < x.size(); ++j) {
      if (tier == 0) ASSERT_EQ(y[j], float(double(x[j]) * m64)) << j;
      else ASSERT_EQ(y[j], x[j] * m32) << tier << ' ' << j;
    }
  }
}

TEST(rope_yarn, InterleavedIsHalfSplitOfDeinterleaved) {
  // HF de-interleaves, then rotates half-split: the two pairings differ by that permutation of
  // the input alone, bit for bit (the same products in the same order), in every tier.
  Rng rng(3);
  const std::vector<int64_t> pos{0, 1, 4095, 4096, 65535, 163839};
  const std::vector<float> x = rng.activations(6 * 128 * 64);
  const std::vector<float> de = deinterleave(x, 64);
  for (Fn f : kTiers) {
    std::vector<float> a(x.size()), b(x.size());
    f(cogito(6, 128, true), pos, x, a);
    f(cogito(6, 128, false), pos, de, b);
    EXPECT_TRUE(bits_equal(a, b));
  }
}

TEST(rope_yarn, F32TierFollowsMfrOrderBitExact) {
  // moeflux MFR (riir/attn/rope.rs): correction range, ramp and blend in f32 (compute_yarn_inv_freq,
  // yarn_find_correction_range, yarn_linear_ramp_mask), angle (float)pos * inv, cosf * mscale,
  // sinf * mscale, unfused products, half-split pairs. The one change is HF's interpolation
  // frequency 1 / (factor * pf) where MFR has 1 / powf(factor * theta, e) (see rope_yarn.h).
  const float R = 64.0f, theta = 1e4f, factor = 40.0f;
  auto corr = [&](float n) {
    return (R * std::log(4096.0f / (n * 2.0f * std::numbers::pi_v<float>))) / (2.0f * std::log(theta));
  };
  const float low = std::clamp(std::floor(corr(32.0f)), 0.0f, R - 1), high = std::clamp(std::ceil(corr(1.0f)), 0.0f, R - 1);
  ASSERT_EQ(low, 10.0f);  // MFR's f32 range is HF's double one here
  ASSERT_EQ(high, 23.0f);
  float inv[32];
  for (int i = 0; i < 32; ++i) {
    const float e = float(2 * i) / R, pf = std::pow(theta, e);
    const float extra = 1.0f / pf, inter = 1.0f / (factor * pf);
    const float w = std::clamp((float(i) - low) / (high - low), 0.0f, 1.0f);
    inv[i] = inter * w + extra * (1.0f - w);
  }
  const float mscale = (0.1f * 1.0f * std::log(factor) + 1.0f) / (0.1f * 1.0f * std::log(factor) + 1.0f);
  Rng rng(1);
  const std::vector<int64_t> pos{0, 1, 4095, 4096, 65535, 163839};
  const std::vector<float> x = rng.activations(6 * 8 * 64);
  std::vector<float> y(x.size());
  rope_yarn_ref<float>(cogito(6, 8, false), pos, x, y);
  for (int t = 0; t < 6; ++t)
    for (int i = 0; i < 32; ++i) {
      const float angle = float(pos[t]) * inv[i];
      const float c = std::cos(angle) * mscale, s = std::sin(angle) * mscale;
      for (int h = 0; h < 8; ++h) {
        const int b = (t * 8 + h) * 64;
        const float x0c = x[b + i] * c, x1s = x[b + i + 32] * s, x0s = x[b + i] * s, x1c = x[b + i + 32] * c;
        EXPECT_EQ(y[b + i], x0c - x1s) << t << ' ' << h << ' ' << i;
        EXPECT_EQ(y[b + i + 32], x0s + x1c) << t << ' ' << h << ' ' << i;
      }
    }
}

TEST(rope_yarn, PairNormsScaledByMscale) {
  // A rotation keeps |(x0, x1)| whatever the angle error; m scales it. Each component is within
  // 5u m |r| + d_m |r| of the exact scaled rotation by the computed angle (cosf, sinf within 1 ULP
  // and the product with m: 3u; the rotation's products and sum: 2u; d_m <= 13u m, m's f32
  // ratio), the truth within u m |r|: the pair within sqrt(2) 18u m |r| < 26u m |r|.
  Rng rng(4);
  const std::vector<int64_t> pos{0, 1, 4095, 4096, 65535, 163839};
  const std::vector<float> x = rng.activations(6 * 16 * 64);
  for (const float all_dim : {1.0f, 0.0f, 0.5f}) {
    RopeYarnParams p = cogito(6, 16);
    p.mscale_all_dim = all_dim;
    const double m = rope_yarn_attention_factor<double>(p);
    for (Fn f : kTiers) {
      std::vector<float> y(x.size());
      f(p, pos, x, y);
      for (int64_t b = 0; b < int64_t(x.size()); b += 64)
        for (int64_t i = 0; i < 32; ++i) {
          const double nx = std::hypot(double(x[b + 2 * i]), double(x[b + 2 * i + 1]));
          const double ny = std::hypot(double(y[b + i]), double(y[b + i + 32]));
          EXPECT_LE(std::fabs(ny - m * nx), 26 * kU32 * m * nx) << all_dim << ' ' << b << ' ' << i;
        }
    }
  }
}

TEST(rope_yarn, F32AngleErrorGrowsWithPosition) {
  // The engines' f32 angle is off by ~|pos inv| (a few u): relative to a pair's norm the f32 tier's
  // error is ~1e-7 at position 1 and ~1e-2 at Cogito's last position. A tier that formed the
  // angle in f64 would fail the lower limits: this pins the engines' semantics, not accuracy.
  Rng rng(6);
  const RopeYarnParams p = cogito(1, 128);
  const std::vector<float> x = rng.activations(128 * 64);
  auto worst = [&](int64_t pos) {
    std::vector<float> t(x.size()), f(x.size());
    const std::vector<int64_t> ps{pos};
    rope_yarn_ref<double>(p, ps, x, t);
    rope_yarn_ref<float>(p, ps, x, f);
    double w = 0;
    for (int64_t b = 0; b < int64_t(x.size()); b += 64)
      for (int64_t i = 0; i < 32; ++i) {
        const double r = std::hypot(double(x[b + 2 * i]), double(x[b + 2 * i + 1]));
        w = std::max({w, std::fabs(double(t[b + i]) - f[b + i]) / r, std::fabs(double(t[b + i + 32]) - f[b + i + 32]) / r});
      }
    return w;
  };
  EXPECT_LT(worst(1), 1e-6);
  EXPECT_GT(worst(4096), 1e-5);
  EXPECT_GT(worst(163839), 1e-3);
  EXPECT_LT(worst(163839), 0.05);  // the bound there: 163839 * ~7u * inv + 6u, inv <= 1
}

TEST(rope_yarn, InPlaceMatchesOutOfPlace) {
  // Interleaved reads cross the halves the results go to: each head is staged before writing.
  Rng rng(7);
  const std::vector<int64_t> pos{3, 70000};
  const std::vector<float> x = rng.activations(2 * 5 * 64);
  for (const bool interleaved : {true, false})
    for (Fn f : kTiers) {
      std::vector<float> y(x.size()), inplace = x;
      f(cogito(2, 5, interleaved), pos, x, y);
      f(cogito(2, 5, interleaved), pos, inplace, inplace);
      EXPECT_TRUE(bits_equal(y, inplace)) << interleaved;
    }
}

TEST(rope_yarn, ScoresDependOnlyOnRelativePosition) {
  // <rope(q, a), rope(k, b)> depends on a - b only, both pairings (truth tier): q_pe and k_pe
  // share the output layout. Each output carries one f32 rounding, so each dot is within
  // 2u sum |q_i||k_i| <= 2u m^2 sum_pairs |q_pair||k_pair| of the exact one; 5u covers both sides.
  Rng rng(5);
  const std::vector<float> q = rng.activations(64), k = rng.activations(64);
  for (const bool interleaved : {true, false}) {
    const RopeYarnParams p = cogito(1, 1, interleaved);
    auto score = [&](int64_t a, int64_t b) {
      std::vector<float> qr(64), kr(64);
      rope_yarn_ref<double>(p, std::vector<int64_t>{a}, q, qr);
      rope_yarn_ref<double>(p, std::vector<int64_t>{b}, k, kr);
      double s = 0;
      for (int i = 0; i < 64; ++i) s += double(qr[i]) * kr[i];
      return s;
    };
    double mass = 0;
    for (int i = 0; i < 32; ++i) {
      int64_t a = 0, b = 0;
      rope_yarn_pair(p, i, a, b);
      mass += std::hypot(double(q[a]), double(q[b])) * std::hypot(double(k[a]), double(k[b]));
    }
    for (int64_t shift : {1, 4000, 150000})
      EXPECT_NEAR(score(137, 100), score(137 + shift, 100 + shift), 5 * kU32 * mass) << shift;
  }
}

TEST(rope_yarn, NanPropagatesWithinItsPair) {
  // Interleaved pair 1 is stored at (2, 3) and lands at (1, 33); half-split pair 2 at (2, 34).
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<int64_t> pos{0, 77};
  for (const bool interleaved : {true, false})
    for (Fn f : kTiers) {
      std::vector<float> x(2 * 64, 1.0f), y(x.size());
      x[2] = nan;       // token 0 (position 0)
      x[64 + 2] = nan;  // token 1
      f(cogito(2, 1, interleaved), pos, x, y);
      const int a = interleaved ? 1 : 2, b = a + 32;
      for (int j = 0; j < 128; ++j) {
        const int c = j % 64;
        EXPECT_EQ(std::isnan(y[j]), c == a || c == b) << interleaved << ' ' << j;
      }
    }
}

TEST(rope_yarn, BadArguments) {
  std::vector<float> x(2 * 4 * 8), y(x.size());
  const std::vector<int64_t> pos{0, 5};
  RopeYarnParams p = cogito(2, 4);
  p.rotary_dim = 8;
  auto with = [&](auto edit) {
    RopeYarnParams q = p;
    edit(q);
    return q;
  };
  test::expect_error([&] { rope_yarn_ref<double>(with([](auto& q) { q.rotary_dim = 3; }), pos, x, y); },
                     "rope_yarn: rotary_dim=3, expected even and in [2, 2^24]");
  test::expect_error([&] { rope_yarn_fast(with([](auto& q) { q.rotary_dim = 0; }), pos, x, y); }, "rotary_dim=0");
  test::expect_error([&] { rope_yarn_ref<float>(with([](auto& q) { q.theta = 1.0f; }), pos, x, y); },
                     "rope_yarn: theta=1, expected finite and > 1");
  test::expect_error([&] { rope_yarn_ref<float>(with([](auto& q) { q.factor = 0.0f; }), pos, x, y); },
                     "rope_yarn: factor=0, expected finite and > 0");
  test::expect_error([&] { rope_yarn_fast(with([](auto& q) { q.original_max_position = 0; }), pos, x, y); },
                     "rope_yarn: original_max_position=0, expected > 0");
  test::expect_error([&] { rope_yarn_ref<double>(with([](auto& q) { q.beta_slow = -1.0f; }), pos, x, y); },
                     "rope_yarn: beta_fast=32 beta_slow=-1, expected finite and > 0");
  test::expect_error([&] { rope_yarn_ref<double>(with([](auto& q) { q.mscale = std::nanf(""); }), pos, x, y); },
                     "rope_yarn: mscale=nan mscale_all_dim=1, expected finite and >= 0");
  test::expect_error([&] { rope_yarn_ref<float>(p, std::vector<int64_t>{0, -3}, x, y); },
                     "rope_yarn: position -3 of token 1 out of range [0, 2^31)");
  test::expect_error([&] { rope_yarn_fast(p, std::vector<int64_t>{0}, x, y); },
                     "rope_yarn: positions has 1 elements, expected 2");
  test::expect_error([&] { rope_yarn_ref<double>(with([](auto& q) { q.tokens = 3; }), std::vector<int64_t>{0, 1, 2}, x, y); },
                     "rope_yarn: x has 64 elements, expected 96");
  test::expect_error([&] { rope_yarn_ref<double>(p, pos, x, std::span<float>(y).first(63)); },
                     "rope_yarn: y has 63 elements, expected 64");
  std::vector<float> big(x.size() + 1);
  test::expect_error([&] { rope_yarn_fast(p, pos, std::span<const float>(big).first(64), std::span<float>(big).last(64)); },
                     "rope_yarn: y partially overlaps x");
}

TEST(rope_yarn, ThreeWayAgreement) { test::expect_all_pass(rope_yarn_check(1234, CheckScope::All)); }

}  // namespace
}  // namespace moe
