#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "check/checks.h"
#include "core/rng.h"
#include "ops/rope.h"
#include "test_util.h"

namespace moe {
namespace {

using Fn = void (*)(const RopeParams&, std::span<const int64_t>, std::span<const float>, std::span<float>);
const Fn kTiers[3] = {&rope_ref<double>, &rope_ref<float>, &rope_fast};

bool bits_equal(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
}

TEST(rope, HandComputed) {
  // R = 2 (one pair, inv_freq 1), D = 3, pos 1: x = [1, 0, 7] -> [cos 1, sin 1, 7].
  const std::vector<int64_t> one{1};
  for (Fn f : kTiers) {
    std::vector<float> y(3);
    f({1, 1, 3, 2, 1e4f}, one, std::vector<float>{1, 0, 7}, y);
    EXPECT_NEAR(y[0], 0.54030230586813977, 1e-7);
    EXPECT_NEAR(y[1], 0.84147098480789650, 1e-7);
    EXPECT_EQ(y[2], 7.0f);
  }
  // R = 4, D = 6, theta = 100, pos 10: inv_freq = [1, 100^(-1/2) = 0.1], angles [10, 1]; the
  // pairs are (0, 2) and (1, 3) (half-split), channels 4, 5 pass through.
  //   y0 = 1 cos 10 - 3 sin 10 =  0.79299180   y2 = 1 sin 10 + 3 cos 10 = -3.06123570
  //   y1 = 2 cos 1 - 4 sin 1   = -2.28527933   y3 = 2 sin 1 + 4 cos 1   =  3.84415119
  const std::vector<int64_t> ten{10};
  const std::vector<float> x{1, 2, 3, 4, 5, 6};
  for (Fn f : kTiers) {
    std::vector<float> y(6);
    f({1, 1, 6, 4, 100.0f}, ten, x, y);
    EXPECT_NEAR(y[0], 0.79299180, 2e-6);
    EXPECT_NEAR(y[1], -2.28527933, 2e-6);
    EXPECT_NEAR(y[2], -3.06123570, 2e-6);
    EXPECT_NEAR(y[3], 3.84415119, 2e-6);
    EXPECT_EQ(y[4], 5.0f);
    EXPECT_EQ(y[5], 6.0f);
  }
}

TEST(rope, F32TierMatchesEngineOrderBitExact) {
  // CPU-C apply_rotary_emb: inv_freq = 1/powf(theta, (float)(2i)/R), angle = (float)pos * inv_freq,
  // cosf/sinf, unfused products.
  Rng rng(1);
  const RopeParams p{5, 2, 256, 64, 1e7f};
  const std::vector<int64_t> pos{0, 1, 4095, 65535, 1000000};
  const std::vector<float> x = rng.activations(5 * 2 * 256);
  std::vector<float> y(x.size());
  rope_ref<float>(p, pos, x, y);
  for (int t = 0; t < 5; ++t)
    for (int h = 0; h < 2; ++h)
      for (int i = 0; i < 32; ++i) {
        const float inv_freq = 1.0f / std::pow(1e7f, float(2 * i) / 64.0f);
        const float angle = float(pos[t]) * inv_freq;
        const float c = std::cos(angle), s = std::sin(angle);
        const int b = (t * 2 + h) * 256;
        const float x1c = x[b + i] * c, x2s = x[b + i + 32] * s, x1s = x[b + i] * s, x2c = x[b + i + 32] * c;
        EXPECT_EQ(y[b + i], x1c - x2s) << t << ' ' << h << ' ' << i;
        EXPECT_EQ(y[b + i + 32], x1s + x2c) << t << ' ' << h << ' ' << i;
      }
}

TEST(rope, PositionZeroIsIdentityBitExact) {
  // cos 0 = 1 and sin 0 = 0 exactly in every tier, so x*1 - x2*0 = x bit for bit (finite,
  // nonzero data; see rope.h for -0 and infinities).
  Rng rng(2);
  const RopeParams p{3, 32, 256, 64, 1e7f};
  const std::vector<float> x = rng.activations(3 * 32 * 256);
  const std::vector<int64_t> zeros(3, 0);
  for (Fn f : kTiers) {
    std::vector<float> y(x.size());
    f(p, zeros, x, y);
    EXPECT_TRUE(bits_equal(x, y));
  }
}

TEST(rope, TailIsCopiedBitExact) {
  // Channels [R, D) keep their exact bits, NaN payloads, -0 and infinities included, at any
  // position and in place.
  Rng rng(3);
  const RopeParams p{2, 3, 80, 64, 1e7f};
  std::vector<float> x = rng.activations(2 * 3 * 80);
  const float odd_nan = std::bit_cast<float>(0x7FC12345u);
  for (int64_t r = 0; r < 6; ++r) {
    x[r * 80 + 64] = odd_nan, x[r * 80 + 65] = -0.0f, x[r * 80 + 66] = -std::numeric_limits<float>::infinity();
  }
  const std::vector<int64_t> pos{12345, 999999};
  for (Fn f : kTiers) {
    std::vector<float> y(x.size()), inplace = x;
    f(p, pos, x, y);
    f(p, pos, inplace, inplace);
    for (int64_t r = 0; r < 6; ++r) {
      EXPECT_TRUE(bits_equal(std::span(x).subspan(r * 80 + 64, 16), std::span(y).subspan(r * 80 + 64, 16))) << r;
      EXPECT_TRUE(bits_equal(std::span(x).subspan(r * 80 + 64, 16), std::span(inplace).subspan(r * 80 + 64, 16)));
    }
    EXPECT_TRUE(bits_equal(y, inplace));
  }
}

TEST(rope, PairNormsPreservedAtEveryPosition) {
  // Whatever the angle error, a rotation keeps |(x1, x2)|; only rounding moves it: each
  // component is within 4u |r| of the exact rotation by the computed angle (cosf and sinf within
  // 1 ULP of their values: 2u (|x1 c| + |x2 s|); the products and the sum as much again; and
  // |x1 c| + |x2 s| <= |r|), so the pair within 4 sqrt(2) u |r| < 6u |r|.
  Rng rng(4);
  const RopeParams p{5, 16, 256, 64, 1e7f};
  const std::vector<int64_t> pos{0, 1, 4095, 65535, 1000000};
  const std::vector<float> x = rng.activations(5 * 16 * 256);
  for (Fn f : kTiers) {
    std::vector<float> y(x.size());
    f(p, pos, x, y);
    for (int64_t r = 0; r < 5 * 16; ++r)
      for (int64_t i = 0; i < 32; ++i) {
        const int64_t b = r * 256;
        const double nx = std::hypot(double(x[b + i]), double(x[b + i + 32]));
        const double ny = std::hypot(double(y[b + i]), double(y[b + i + 32]));
        EXPECT_LE(std::fabs(ny - nx), 6 * kU32 * nx) << r << ' ' << i;
      }
  }
}

TEST(rope, F32AngleErrorGrowsWithPosition) {
  // The engines' f32 angle is off by ~|pos * inv_freq| u: relative to a pair's norm the f32
  // tier's error is ~1e-7 at position 1 and ~1e-2 at a million (measured 1.2e-7, 7e-5, 1.4e-3,
  // 2.9e-2 at 1, 4095, 65535, 1e6). A tier that formed the angle in f64 would fail the lower
  // limits: this pins the engines' semantics, not just accuracy.
  Rng rng(6);
  const RopeParams p{1, 32, 256, 64, 1e7f};
  const std::vector<float> x = rng.activations(32 * 256);
  auto worst = [&](int64_t pos) {
    std::vector<float> t(x.size()), f(x.size());
    const std::vector<int64_t> ps{pos};
    rope_ref<double>(p, ps, x, t);
    rope_ref<float>(p, ps, x, f);
    double w = 0;
    for (int64_t b = 0; b < 32 * 256; b += 256)
      for (int64_t i = 0; i < 32; ++i) {
        const double r = std::hypot(double(x[b + i]), double(x[b + i + 32]));
        w = std::max(w, std::fabs(double(t[b + i]) - f[b + i]) / r);
        w = std::max(w, std::fabs(double(t[b + i + 32]) - f[b + i + 32]) / r);
      }
    return w;
  };
  EXPECT_LT(worst(1), 1e-6);
  EXPECT_GT(worst(4095), 1e-5);
  EXPECT_GT(worst(65535), 2e-4);
  EXPECT_GT(worst(1000000), 5e-3);
  EXPECT_LT(worst(1000000), 0.24 + 5 * kU32);  // the bound: |a| 4u + 5u, |a| <= 1e6
}

TEST(rope, ScoresDependOnlyOnRelativePosition) {
  // <rope(q, m), rope(k, n)> depends on m - n only (truth tier). Each output carries one f32
  // rounding (relative u per component), so each dot is within 2u sum |q_i||k_i| <= 2u
  // sum_pairs |q_pair||k_pair| of the exact one (+ the tail, unchanged): 5u covers both sides (the
  // f64 angles are off by < 1e-9 rad here, negligible).
  Rng rng(5);
  const RopeParams p{1, 1, 256, 64, 1e7f};
  const std::vector<float> q = rng.activations(256), k = rng.activations(256);
  auto score = [&](int64_t m, int64_t n) {
    std::vector<float> qr(256), kr(256);
    rope_ref<double>(p, std::vector<int64_t>{m}, q, qr);
    rope_ref<double>(p, std::vector<int64_t>{n}, k, kr);
    double s = 0;
    for (int i = 0; i < 256; ++i) s += double(qr[i]) * kr[i];
    return s;
  };
  double mass = 0;
  for (int i = 0; i < 32; ++i)
    mass += std::hypot(double(q[i]), double(q[i + 32])) * std::hypot(double(k[i]), double(k[i + 32]));
  for (int i = 64; i < 256; ++i) mass += std::fabs(double(q[i]) * k[i]);
  for (int64_t shift : {1, 1000, 500000})
    EXPECT_NEAR(score(137, 100), score(137 + shift, 100 + shift), 5 * kU32 * mass) << shift;
}

TEST(rope, NanPropagatesWithinItsPair) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<int64_t> pos{0, 77};
  for (Fn f : kTiers) {
    std::vector<float> x(2 * 12, 1.0f), y(24);
    x[2] = nan;       // token 0 (position 0), pair (2, 5) of R = 6
    x[12 + 9] = nan;  // token 1, tail channel 9
    f({2, 1, 12, 6, 1e4f}, pos, x, y);
    for (int j = 0; j < 24; ++j) EXPECT_EQ(std::isnan(y[j]), j == 2 || j == 5 || j == 21) << j;
  }
}

TEST(rope, BadArguments) {
  std::vector<float> x(2 * 4 * 8), y(x.size());
  const std::vector<int64_t> pos{0, 5};
  test::expect_error([&] { rope_ref<double>({2, 4, 8, 3, 1e4f}, pos, x, y); }, "rope: rotary_dim=3, expected even");
  test::expect_error([&] { rope_fast({2, 4, 8, 10, 1e4f}, pos, x, y); },
                     "rope: rotary_dim=10, expected even and in [2, head_dim=8]");
  test::expect_error([&] { rope_ref<float>({2, 4, 8, 0, 1e4f}, pos, x, y); }, "rotary_dim=0");
  test::expect_error([&] { rope_ref<float>({2, 4, 8, 4, 1e4f}, std::vector<int64_t>{0, -3}, x, y); },
                     "rope: position -3 of token 1 out of range");
  test::expect_error([&] { rope_fast({2, 4, 8, 4, 1e4f}, std::vector<int64_t>{0, int64_t(1) << 40}, x, y); },
                     "out of range [0, 2^31)");
  test::expect_error([&] { rope_fast({2, 4, 8, 4, 1e4f}, std::vector<int64_t>{0}, x, y); },
                     "rope: positions has 1 elements, expected 2");
  test::expect_error([&] { rope_ref<double>({3, 4, 8, 4, 1e4f}, std::vector<int64_t>{0, 1, 2}, x, y); },
                     "rope: x has 64 elements, expected 96");
  test::expect_error([&] { rope_ref<double>({2, 4, 8, 4, 0.0f}, pos, x, y); }, "rope: theta=0");
  test::expect_error([&] { rope_ref<double>({2, 4, 8, 4, std::nanf("")}, pos, x, y); }, "rope: theta=nan");
  std::vector<float> big(x.size() + 1);
  test::expect_error([&] { rope_fast({2, 4, 8, 4, 1e4f}, pos, std::span<const float>(big).first(64),
                                     std::span<float>(big).last(64)); },
                     "y partially overlaps x");
}

TEST(rope, ThreeWayAgreement) { test::expect_all_pass(rope_check(1234, CheckScope::All)); }

}  // namespace
}  // namespace moe
