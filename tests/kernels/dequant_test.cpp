#include <cmath>
#include <limits>

#include "check/checks.h"
#include "core/mlx_quantize.h"
#include "core/rng.h"
#include "core/test_data.h"
#include "ops/dequant.h"
#include "test_util.h"

namespace moe {
namespace {

void run_tier(int tier, const DequantParams& p, const QuantMatrix& W, std::span<float> y) {
  if (tier == 0) dequant_ref<double>(p, W, y);
  if (tier == 1) dequant_ref<float>(p, W, y);
  if (tier == 2) dequant_fast(p, W, y);
}

// One row of 64 columns at 4 bits: codes j % 16, one group with scale s and bias b.
QuantStorage hand_matrix(float s, float b) {
  QuantStorage m;
  m.rows = 1, m.cols = 64, m.bits = 4, m.group_size = 64;
  m.w.assign(8, 0x76543210u);
  for (size_t i = 1; i < 8; i += 2) m.w[i] = 0xFEDCBA98u;
  m.scales = {f32_to_bf16_rne(s)}, m.biases = {f32_to_bf16_rne(b)};
  return m;
}

TEST(dequant, HandComputed) {
  // s = 0.5, b = -2: y = q/2 - 2 for q = j % 16. Negative scale s = -0.25, b = 3: y = 3 - q/4.
  for (int tier = 0; tier < 3; ++tier) {
    std::vector<float> y(64);
    run_tier(tier, {1, 64, 4, 64}, hand_matrix(0.5f, -2.0f).view(), y);
    for (int j = 0; j < 64; ++j) EXPECT_EQ(y[j], float(j % 16) * 0.5f - 2.0f) << "tier " << tier << " j " << j;
    run_tier(tier, {1, 64, 4, 64}, hand_matrix(-0.25f, 3.0f).view(), y);
    EXPECT_EQ(y[0], 3.0f);
    EXPECT_EQ(y[15], -0.75f);
    EXPECT_EQ(y[17], 2.75f);
  }
}

TEST(dequant, InvertsExactQuantization) {
  // Values k * 2^-6 - edge with integer k in range quantize with a power-of-two step and decode
  // back exactly, for every bit width and tier; two rows, two groups each.
  for (int bits : {2, 4, 8}) {
    const int n = (1 << bits) - 1;
    std::vector<float> x(2 * 128);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i * 7 % (n + 1)) - n) * 0x1p-6f;
    for (size_t g = 0; g < 4; ++g) x[g * 64 + 1] = -float(n) * 0x1p-6f, x[g * 64 + 2] = 0.0f;  // full range
    const QuantStorage m = mlx_quantize(x, 2, 128, bits);
    for (int tier = 0; tier < 3; ++tier) {
      std::vector<float> y(x.size());
      run_tier(tier, {2, 128, bits, 64}, m.view(), y);
      EXPECT_EQ(y, x) << "bits " << bits << " tier " << tier;
    }
  }
}

TEST(dequant, FmaEqualsMultiplyAddForEveryCode) {
  // The fact the bound 0 rests on: for q <= 255 and bf16 s, b, round(q*s) = q*s, so the
  // unfused q*s + b (two roundings) equals fma(q, s, b) (one). volatile keeps the product
  // rounded on its own even where the compiler could contract.
  Rng rng(9);
  for (int i = 0; i < 2000; ++i) {
    const float s = bf16_to_f32(rng.bf16_normal_vec(1, 1.0)[0]) * std::ldexp(1.0f, int(rng.below(40)) - 20);
    const float b = bf16_to_f32(rng.bf16_normal_vec(1, 1.0)[0]) * std::ldexp(1.0f, int(rng.below(40)) - 20);
    for (int q = 0; q < 256; ++q) {
      volatile float prod = float(q) * s;
      ASSERT_EQ(double(prod), double(q) * double(s));
      ASSERT_EQ(prod + b, std::fma(float(q), s, b)) << q << " " << s << " " << b;
    }
  }
}

TEST(dequant, NanScaleOrInfBiasReachesOnlyItsGroup) {
  QuantStorage m = random_quant(Rng(4), 3, 256, 4);
  m.scales[1 * 4 + 2] = 0x7FC0;  // row 1, group 2: NaN scale
  m.biases[2 * 4 + 0] = 0xFF80;  // row 2, group 0: -Inf bias
  for (int tier = 0; tier < 3; ++tier) {
    std::vector<float> y(3 * 256);
    run_tier(tier, {3, 256, 4, 64}, m.view(), y);
    for (int64_t r = 0; r < 3; ++r)
      for (int64_t c = 0; c < 256; ++c) {
        const float v = y[r * 256 + c];
        const bool nan_group = r == 1 && c / 64 == 2, inf_group = r == 2 && c / 64 == 0;
        EXPECT_EQ(std::isnan(v), nan_group) << "tier " << tier << " r " << r << " c " << c;
        EXPECT_EQ(v == -INFINITY, inf_group) << "tier " << tier << " r " << r << " c " << c;
      }
  }
}

TEST(dequant, ZeroRows) {
  std::vector<float> y;
  const QuantStorage m = random_quant(Rng(1), 0, 64, 4);
  for (int tier = 0; tier < 3; ++tier) run_tier(tier, {0, 64, 4, 64}, m.view(), y);
}

TEST(dequant, BadArguments) {
  const QuantStorage m = random_quant(Rng(1), 2, 128, 4);
  std::vector<float> y(256);
  test::expect_error([&] { dequant_ref<double>({2, 128, 4, 64}, m.view(), std::span<float>(y).first(255)); },
                     "dequant: y has 255 elements, expected 256");
  test::expect_error([&] { dequant_fast({3, 128, 4, 64}, m.view(), y); },
                     "dequant: W has shape [2, 128], expected [3, 128]");
  test::expect_error([&] { dequant_ref<float>({2, 128, 8, 64}, m.view(), y); },
                     "dequant: W has bits=4 group_size=64, expected bits=8 group_size=64");
  QuantMatrix bad = m.view();
  bad.bits = 3;
  test::expect_error([&] { dequant_fast({2, 128, 3, 64}, bad, y); }, "dequant: W has bits=3, expected 2, 4 or 8");
  bad = m.view();
  bad.cols = 96;
  test::expect_error([&] { dequant_fast({2, 96, 4, 64}, bad, y); }, "dequant: W has cols=96, expected a multiple of group_size=64");
  bad = m.view();
  bad.scales = nullptr;
  test::expect_error([&] { dequant_ref<double>({2, 128, 4, 64}, bad, y); }, "dequant: W has a null data pointer");
  test::expect_error([&] { dequant_ref<double>({2, 0, 4, 64}, m.view(), y); }, "dequant: rows=2 cols=0");
}

TEST(dequant, ThreeWayAgreement) { test::expect_all_pass(dequant_check(1234, CheckScope::All)); }

}  // namespace
}  // namespace moe
