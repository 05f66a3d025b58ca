#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "check/checks.h"
#include "core/check_util.h"
#include "core/ggml_blocks.h"
#include "core/half.h"
#include "ops/dequant_ggml.h"
#include "spec/dequant_ggml_spec.h"
#include "test_util.h"

namespace moe {
namespace {

constexpr uint32_t kQ4_1 = 3, kQ4_K = 12;

void run_tier(int tier, const DequantGgmlParams& p, const BlockMatrix& W, std::span<float> y) {
  if (tier == 0) dequant_ggml_ref<double>(p, W, y);
  if (tier == 1) dequant_ggml_ref<float>(p, W, y);
  if (tier == 2) dequant_ggml_fast(p, W, y);
}

TEST(dequant_ggml, HandComputedQ4_1) {
  // d = 0.25, m = -1: value j = 0.25 q_j - 1 with q_j = j % 16 (low nibbles j < 16, high j >= 16).
  std::vector<uint8_t> b(20);
  const uint16_t d = f16_from_double(0.25), m = f16_from_double(-1.0);
  std::memcpy(&b[0], &d, 2), std::memcpy(&b[2], &m, 2);
  for (int j = 0; j < 16; ++j) b[4 + j] = uint8_t(j | (15 - j) << 4);
  for (int tier = 0; tier < 3; ++tier) {
    std::vector<float> y(32);
    run_tier(tier, {kQ4_1, 1, 32}, {kQ4_1, b.data(), 1, 32}, y);
    for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], 0.25f * float(j < 16 ? j : 31 - j) - 1.0f) << "tier " << tier << " j " << j;
  }
}

// Every tier, every format, every value: the exact value rounded once to f32.
TEST(dequant_ggml, EveryFormatIsTheRoundedExactValue) {
  for (const DequantGgmlShape& s : dequant_ggml_shapes(true, false)) {
    const std::vector<uint8_t> bytes = dequant_ggml_inputs(s.p, 7);
    const BlockMatrix W{uint32_t(s.p.type), bytes.data(), s.p.rows, s.p.cols};
    std::vector<double> exact(size_t(s.p.rows * s.p.cols));
    ggml_dequant_f64(W.type, bytes, s.p.rows * s.p.cols, exact.data());
    for (int tier = 0; tier < 3; ++tier) {
      std::vector<float> y(exact.size());
      run_tier(tier, s.p, W, y);
      size_t bad = 0;
      for (size_t i = 0; i < y.size(); ++i) bad += std::bit_cast<uint32_t>(y[i]) != std::bit_cast<uint32_t>(float(exact[i]));
      EXPECT_EQ(bad, 0u) << s.label << " tier " << tier;
    }
  }
}

TEST(dequant_ggml, NanScaleReachesOnlyItsBlock) {
  const DequantGgmlParams p{kQ4_K, 2, 512};
  std::vector<uint8_t> bytes = dequant_ggml_inputs(p, 3);
  const uint16_t nan = 0x7E00;
  std::memcpy(&bytes[144], &nan, 2);  // d of the second block of row 0
  for (int tier = 0; tier < 3; ++tier) {
    std::vector<float> y(2 * 512);
    run_tier(tier, p, {kQ4_K, bytes.data(), 2, 512}, y);
    for (int i = 0; i < 1024; ++i)
      EXPECT_EQ(std::isnan(y[size_t(i)]), i >= 256 && i < 512) << "tier " << tier << " i " << i;
  }
}

TEST(dequant_ggml, BadArgumentsNameTheProblem) {
  std::vector<uint8_t> bytes(144);
  std::vector<float> y(256);
  for (int tier = 0; tier < 3; ++tier) {
    test::expect_error([&] { run_tier(tier, {kQ4_K, 1, 256}, {kQ4_K, bytes.data(), 1, 256}, std::span<float>(y).first(255)); }, "dequant_ggml: y");
    test::expect_error([&] { run_tier(tier, {kQ4_K, 1, 200}, {kQ4_K, bytes.data(), 1, 200}, y); }, "multiple of q4_K's block");
    test::expect_error([&] { run_tier(tier, {9, 1, 256}, {9, bytes.data(), 1, 256}, y); }, "type 9 is not a ggml format");
    test::expect_error([&] { run_tier(tier, {kQ4_K, 1, 256}, {2, bytes.data(), 1, 256}, y); }, "params say type 12");
  }
}

TEST(dequant_ggml, ThreeTierCheckPasses) { test::expect_all_pass(dequant_ggml_check(1, CheckScope::All)); }

}  // namespace
}  // namespace moe
