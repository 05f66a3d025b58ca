// MLX affine quantizer (core/mlx_quantize.h): packing, the edge/q0 rule, scale signs, error
// bounds, bad input; and the 4-bit -> 2-bit requantiser.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/mlx_quantize.h"
#include "core/rng.h"
#include "core/test_data.h"
#include "test_util.h"

namespace moe {
namespace {

uint32_t code(const QuantStorage& m, int64_t r, int64_t c) {
  return quant_code(m.w.data() + r * (m.cols * m.bits / 32), c, m.bits);
}
float scale(const QuantStorage& m, int64_t r, int64_t c) {
  return bf16_to_f32(m.scales[r * (m.cols / m.group_size) + c / m.group_size]);
}
float bias(const QuantStorage& m, int64_t r, int64_t c) {
  return bf16_to_f32(m.biases[r * (m.cols / m.group_size) + c / m.group_size]);
}
float decode(const QuantStorage& m, int64_t r, int64_t c) {
  return std::fma(float(code(m, r, c)), scale(m, r, c), bias(m, r, c));
}

// One group of 64 whose values are k - n for k = pattern(j): min -n, max 0, so the edge is the
// minimum, the step is exactly 1 and the bias -n; the codes are exactly the pattern.
std::vector<float> ramp_group(int bits, uint32_t (*pattern)(int)) {
  const int n = (1 << bits) - 1;
  std::vector<float> w(64);
  for (int j = 0; j < 64; ++j) w[j] = float(int(pattern(j)) - n);
  return w;
}

TEST(mlx_quantize, PacksLowBitsFirst) {
  {  // 4 bits: q = j % 16 -> words 0x76543210, 0xFEDCBA98, ...
    const QuantStorage m = mlx_quantize(ramp_group(4, [](int j) { return uint32_t(j % 16); }), 1, 64, 4);
    ASSERT_EQ(m.w.size(), 8u);
    EXPECT_EQ(m.w[0], 0x76543210u);
    EXPECT_EQ(m.w[1], 0xFEDCBA98u);
    EXPECT_EQ(m.scales[0], 0x3F80);  // 1.0
    EXPECT_EQ(m.biases[0], 0xC170);  // -15.0
  }
  {  // 2 bits: q = j % 4 -> 0b11'10'01'00 per byte
    const QuantStorage m = mlx_quantize(ramp_group(2, [](int j) { return uint32_t(j % 4); }), 1, 64, 2);
    ASSERT_EQ(m.w.size(), 4u);
    for (uint32_t word : m.w) EXPECT_EQ(word, 0xE4E4E4E4u);
    EXPECT_EQ(bf16_to_f32(m.biases[0]), -3.0f);
  }
  {  // 8 bits: q = j for j < 63 and 255 last (so the range is the full 255 steps of 1)
    const QuantStorage m =
        mlx_quantize(ramp_group(8, [](int j) { return uint32_t(j == 63 ? 255 : j); }), 1, 64, 8);
    ASSERT_EQ(m.w.size(), 16u);
    EXPECT_EQ(m.w[0], 0x03020100u);
    EXPECT_EQ(m.w[1], 0x07060504u);
    EXPECT_EQ(m.w[15], 0xFF3E3D3Cu);
    EXPECT_EQ(bf16_to_f32(m.scales[0]), 1.0f);
    EXPECT_EQ(bf16_to_f32(m.biases[0]), -255.0f);
  }
}

TEST(mlx_quantize, EdgeRuleMakesZeroExact) {
  // 2 bits, group {-1, 0, 0.3, 0...}: s = 1.3/3, edge = min = -1 (|-1| > 0.3), q0 = rint(-1/s)
  // = rint(-2.31) = -2, so s = -1/-2 = 0.5 and bias = -1; 0 -> code 2 -> exactly 0, and the far end
  // 0.3 -> rint(2.6) = 3 -> 0.5 (clipped by 0.2 < one step). The old scheme (s = 1.3/3, bias =
  // min) would decode 0 to -1/3.
  std::vector<float> w(64, 0.0f);
  w[0] = -1.0f, w[2] = 0.3f;
  const QuantStorage m = mlx_quantize(w, 1, 64, 2);
  EXPECT_EQ(scale(m, 0, 0), 0.5f);
  EXPECT_EQ(bias(m, 0, 0), -1.0f);
  EXPECT_EQ(code(m, 0, 0), 0u);
  EXPECT_EQ(code(m, 0, 1), 2u);
  EXPECT_EQ(code(m, 0, 2), 3u);
  EXPECT_EQ(decode(m, 0, 1), 0.0f);
  EXPECT_EQ(decode(m, 0, 2), 0.5f);

  // 4 bits, {-1, 0, 0.9}: s = 1.9/15, q0 = rint(-7.89) = -8, s = 0.125: 0 -> code 8 -> 0.
  w.assign(64, 0.0f);
  w[5] = -1.0f, w[9] = 0.9f;
  const QuantStorage m4 = mlx_quantize(w, 1, 64, 4);
  EXPECT_EQ(scale(m4, 0, 0), 0.125f);
  EXPECT_EQ(code(m4, 0, 0), 8u);
  EXPECT_EQ(decode(m4, 0, 0), 0.0f);
  EXPECT_EQ(decode(m4, 0, 9), 0.875f);  // 1.9 / 0.125 = 15.2 -> 15

  // On random groups the zeros get code -q0, which decodes to 0 up to the bf16 rounding of scale
  // and bias: |q s_bf + b_bf| <= u_bf (|q s| + |b|) (1 + tiny), u_bf = 2^-8, with |q s| = |b|.
  Rng rng(21);
  std::vector<float> x = rng.normal_vec(16 * 256, 0.02);
  for (size_t i = 0; i < x.size(); i += 7) x[i] = 0.0f;
  for (int bits : {2, 4, 8}) {
    const QuantStorage q = mlx_quantize(x, 16, 256, bits);
    for (int64_t r = 0; r < 16; ++r)
      for (int64_t c = 0; c < 256; ++c) {
        if (x[r * 256 + c] != 0.0f) continue;
        const double bound = 2 * 0x1p-8 * std::fabs(bias(q, r, c)) * (1 + 0x1p-7) + 1e-30;
        EXPECT_LE(std::fabs(decode(q, r, c)), bound) << "bits " << bits << " r " << r << " c " << c;
        // |b| = -q0 |s| <= n |s|, so the bound above is below half a step while 2^-7 n < 1/2,
        // i.e. at 2 and 4 bits; at 8 bits bf16 storage can move 0 by more than a step.
        if (bits <= 4) {
          EXPECT_LT(std::fabs(decode(q, r, c)), 0.5 * std::fabs(scale(q, r, c))) << "bits " << bits;
        }
      }
  }
}

TEST(mlx_quantize, ScaleSignFollowsTheDominantEnd) {
  // Dominated by a negative value: edge = min, positive scale.
  std::vector<float> w(64, 0.0f);
  w[0] = -1.0f, w[1] = 0.5f;
  EXPECT_GT(scale(mlx_quantize(w, 1, 64, 4), 0, 0), 0.0f);
  // Dominated by a positive value: edge = max, negative scale; 2 bits {-0.3, 0, 1}: s = -1.3/3,
  // q0 = rint(1/s) = -2, s = 1/-2 = -0.5, bias = 1: 1 -> 0, 0 -> 2 (exact), -0.3 -> 3 -> -0.5.
  w.assign(64, 0.0f);
  w[0] = -0.3f, w[1] = 1.0f;
  const QuantStorage m = mlx_quantize(w, 1, 64, 2);
  EXPECT_EQ(scale(m, 0, 0), -0.5f);
  EXPECT_EQ(bias(m, 0, 0), 1.0f);
  EXPECT_EQ(code(m, 0, 1), 0u);
  EXPECT_EQ(code(m, 0, 2), 2u);
  EXPECT_EQ(decode(m, 0, 0), -0.5f);
  // |min| == |max|: MLX's test is strict (|min| > |max|), so the edge is max: negative scale.
  w.assign(64, 0.0f);
  w[0] = -1.0f, w[1] = 1.0f;
  EXPECT_LT(scale(mlx_quantize(w, 1, 64, 4), 0, 0), 0.0f);
}

TEST(mlx_quantize, ConstantGroups) {
  // All zero: s = -1e-7 (floor, max is the edge), q0 = 0 -> bias 0, every code 0, decodes to 0.
  const QuantStorage z = mlx_quantize(std::vector<float>(64, 0.0f), 1, 64, 4);
  EXPECT_EQ(z.w, std::vector<uint32_t>(8, 0u));
  EXPECT_EQ(bias(z, 0, 0), 0.0f);
  EXPECT_EQ(decode(z, 0, 3), 0.0f);
  // All 0.75: edge = max = 0.75 maps to code 0, bias = 0.75 exactly.
  const QuantStorage c = mlx_quantize(std::vector<float>(64, 0.75f), 1, 64, 4);
  EXPECT_EQ(c.w, std::vector<uint32_t>(8, 0u));
  EXPECT_EQ(decode(c, 0, 63), 0.75f);
}

TEST(mlx_quantize, DequantErrorWithinAboutOneStep) {
  // Interior values round to the nearest code (<= half a step); the far end may clip by up to one
  // step (the step was stretched so the edge lands on code 0). Storing s and b in bf16 adds
  // <= u_bf (n |s| + |b|) with u_bf = 2^-8 (|q| <= n); f32 roundings are far below that.
  // Bound: |s| (1 + 2^-7) + 2^-8 (n |s| + |b|) (1 + 2^-7).
  Rng rng(5);
  const int64_t rows = 32, cols = 512;
  std::vector<float> x = rng.normal_vec(rows * cols, 1.0 / std::sqrt(double(cols)));
  for (size_t i = 0; i < x.size(); i += 101) x[i] *= 8.0f;  // outliers widen some groups
  for (int bits : {2, 4, 8}) {
    const QuantStorage m = mlx_quantize(x, rows, cols, bits);
    const double n = (1 << bits) - 1;
    double worst_steps = 0;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const double s = std::fabs(scale(m, r, c)), b = std::fabs(bias(m, r, c));
        const double err = std::fabs(double(decode(m, r, c)) - x[r * cols + c]);
        ASSERT_LE(err, s * (1 + 0x1p-7) + 0x1p-8 * (n * s + b) * (1 + 0x1p-7))
            << "bits " << bits << " r " << r << " c " << c;
        worst_steps = std::max(worst_steps, err / s);
      }
    EXPECT_GT(worst_steps, 0.4) << "bits " << bits;  // sanity: the codes are not all exact
  }
}

TEST(mlx_quantize, MultipleRowsAndGroupsAreIndependent) {
  // Quantising rows/groups separately gives the same words, scales and biases.
  Rng rng(8);
  const std::vector<float> x = rng.normal_vec(3 * 256, 0.05);
  const QuantStorage all = mlx_quantize(x, 3, 256, 4, 128);
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t g = 0; g < 2; ++g) {
      const std::vector<float> part(x.begin() + r * 256 + g * 128, x.begin() + r * 256 + g * 128 + 128);
      const QuantStorage one = mlx_quantize(part, 1, 128, 4, 128);
      EXPECT_EQ(one.scales[0], all.scales[r * 2 + g]);
      EXPECT_EQ(one.biases[0], all.biases[r * 2 + g]);
      for (int k = 0; k < 16; ++k) EXPECT_EQ(one.w[k], all.w[r * 32 + g * 16 + k]);
    }
}

TEST(mlx_quantize, NonFiniteInputIsRejected) {
  // Decision: MLX computes a NaN code and casts it to an integer (undefined); we refuse it.
  std::vector<float> w(128, 0.5f);
  w[70] = std::numeric_limits<float>::quiet_NaN();
  test::expect_error([&] { mlx_quantize(w, 2, 64, 4); }, "mlx_quantize: w[1][6] = nan, expected a finite value");
  w[70] = INFINITY;
  test::expect_error([&] { mlx_quantize(w, 1, 128, 4); }, "mlx_quantize: w[0][70] = inf");
}

TEST(mlx_quantize, BadArguments) {
  const std::vector<float> w(128, 1.0f);
  test::expect_error([&] { mlx_quantize(w, 1, 128, 3); }, "mlx_quantize: bits=3, expected 2, 4 or 8");
  test::expect_error([&] { mlx_quantize(w, 1, 128, 4, 12); }, "group_size=12, expected a positive multiple of 8");
  test::expect_error([&] { mlx_quantize(w, 1, 128, 4, 0); }, "group_size=0");
  test::expect_error([&] { mlx_quantize(w, 2, 96, 4, 64); }, "cols=96, expected a multiple of group_size=64");
  test::expect_error([&] { mlx_quantize(w, 2, 128, 4); }, "mlx_quantize: w has 128 elements, expected 256");
  test::expect_error([&] { mlx_quantize(w, -1, 128, 4); }, "shape [-1, 128]");
  // A range so wide that the step overflows f32 has no usable scale.
  std::vector<float> huge(64, 0.0f);
  huge[0] = -3e38f, huge[1] = 3e38f;
  test::expect_error([&] { mlx_quantize(huge, 1, 64, 4); }, "has no finite nonzero scale");
}

// A 4-bit, 1-row, 64-column matrix with the given codes and one (scale, bias) pair.
QuantStorage four_bit(uint32_t (*codes)(int), float s, float b) {
  QuantStorage m;
  m.rows = 1, m.cols = 64, m.bits = 4, m.group_size = 64;
  m.w.assign(8, 0u);
  for (int j = 0; j < 64; ++j) m.w[j / 8] |= codes(j) << (4 * (j % 8));
  m.scales = {f32_to_bf16_rne(s)}, m.biases = {f32_to_bf16_rne(b)};
  return m;
}

TEST(requantize_2bit, HandComputedTiesToEven) {
  // Codes j % 7 with s = 1, b = 0: f in 0..6, S2 = 2, B2 = 0; f/2 = 0.5, 1.5, 2.5 round to even.
  const QuantStorage m2 = requantize_2bit(four_bit([](int j) { return uint32_t(j % 7); }, 1.0f, 0.0f).view());
  EXPECT_EQ(m2.bits, 2);
  EXPECT_EQ(m2.scales[0], 0x4000);  // 2.0
  EXPECT_EQ(m2.biases[0], 0x0000);
  const uint32_t want[7] = {0, 0, 1, 2, 2, 2, 3};
  for (int j = 0; j < 64; ++j) EXPECT_EQ(code(m2, 0, j), want[j % 7]) << j;
}

TEST(requantize_2bit, StoresByTruncation) {
  // Codes 1..3 with s = 1, b = 3*2^-9: f = q + 3*2^-9, B2 = 1 + 3*2^-9 (0x3F80C000: RNE would give
  // 0x3F81, truncation 0x3F80), S2 = 2/3 (0x3F2AAAAB: RNE 0x3F2B, truncation 0x3F2A).
  // q2 = rint((f - B2) / S2): 0 -> 0; 1/0x3F2AAAAB rounds to exactly 1.5 in f32 -> 2 (even); 2 -> 3.
  const QuantStorage m2 =
      requantize_2bit(four_bit([](int j) { return uint32_t(1 + j % 3); }, 1.0f, 3 * 0x1p-9f).view());
  EXPECT_EQ(m2.scales[0], 0x3F2A);
  EXPECT_EQ(m2.biases[0], 0x3F80);
  EXPECT_EQ(code(m2, 0, 0), 0u);
  EXPECT_EQ(code(m2, 0, 1), 2u);
  EXPECT_EQ(code(m2, 0, 2), 3u);
}

TEST(requantize_2bit, DegenerateGroupDividesByOne) {
  // All codes 5, s = 0.25, b = -1: f = 0.25 everywhere, S2 = 0 -> codes 0, stored scale 0, bias 0.25.
  const QuantStorage m2 = requantize_2bit(four_bit([](int) { return 5u; }, 0.25f, -1.0f).view());
  EXPECT_EQ(m2.w, std::vector<uint32_t>(4, 0u));
  EXPECT_EQ(m2.scales[0], 0x0000);
  EXPECT_EQ(decode(m2, 0, 17), 0.25f);
}

TEST(requantize_2bit, ErrorWithinHalfAStepPlusTruncation) {
  // |f2 - f| <= S2/2 (nearest of 4 levels spanning [min, max]) + truncation of S2 (relative
  // 2^-7, times q2 <= 3) and of B2 (relative 2^-7), plus f32 roundings (a few u of the values).
  const QuantStorage w4 = random_quant(Rng(3), 16, 512, 4);
  const QuantStorage m2 = requantize_2bit(w4.view());
  ASSERT_EQ(m2.w.size(), 16u * 512 / 16);
  for (int64_t r = 0; r < 16; ++r)
    for (int64_t g = 0; g < 8; ++g) {
      float lo = INFINITY, hi = -INFINITY;
      for (int64_t c = g * 64; c < g * 64 + 64; ++c) lo = std::min(lo, decode(w4, r, c)), hi = std::max(hi, decode(w4, r, c));
      const double s2 = (double(hi) - lo) / 3;
      for (int64_t c = g * 64; c < g * 64 + 64; ++c) {
        const double err = std::fabs(double(decode(m2, r, c)) - decode(w4, r, c));
        const double bound = s2 / 2 + 3 * 0x1p-7 * s2 + 0x1p-7 * std::fabs(lo) + 8 * kU32 * (std::fabs(hi) + std::fabs(lo));
        ASSERT_LE(err, bound) << "r " << r << " c " << c;
      }
    }
}

TEST(requantize_2bit, BadArguments) {
  const QuantStorage w8 = random_quant(Rng(1), 2, 64, 8);
  test::expect_error([&] { requantize_2bit(w8.view()); }, "requantize_2bit: w4 has bits=8, expected 4");
  const QuantStorage g8 = random_quant(Rng(1), 2, 64, 4, 8);
  test::expect_error([&] { requantize_2bit(g8.view()); }, "group_size=8, expected a multiple of 16");
  QuantMatrix bad = random_quant(Rng(1), 2, 64, 4).view();
  bad.cols = 60;
  test::expect_error([&] { requantize_2bit(bad); }, "requantize_2bit: w4 has cols=60");
  QuantStorage nan = four_bit([](int) { return 1u; }, 1.0f, 0.0f);
  nan.biases[0] = 0x7FC0;
  test::expect_error([&] { requantize_2bit(nan.view()); }, "requantize_2bit: w4[0][0] decodes to nan");
}

}  // namespace
}  // namespace moe
