#include "ops/matvec_q.h"

#include <cmath>
#include <limits>

#include "check/checks.h"
#include "core/math.h"
#include "core/rng.h"
#include "core/test_data.h"
#include "test_util.h"

namespace moe {
namespace {

using Fn = void (*)(const MatvecQParams&, const QuantMatrix&, std::span<const float>, std::span<float>);
const Fn kTiers[3] = {matvec_q_ref<double>, matvec_q_ref<float>, matvec_q_fast};

TEST(matvec_q, HandComputed) {
  // One row, 64 columns, 4-bit codes q[c] = c % 16 (word 0x76543210, 0xFEDCBA98 repeated),
  // s = 0.5, b = -1, x = 1: each 16 columns give 0.5 * 120 - 16 = 44, four of them 176.
  QuantStorage m;
  m.rows = 1, m.cols = 64, m.bits = 4, m.group_size = 64;
  m.w = {0x76543210u, 0xFEDCBA98u, 0x76543210u, 0xFEDCBA98u, 0x76543210u, 0xFEDCBA98u, 0x76543210u, 0xFEDCBA98u};
  m.scales = {f32_to_bf16_rne(0.5f)};
  m.biases = {f32_to_bf16_rne(-1.0f)};
  const std::vector<float> x(64, 1.0f);
  for (Fn f : kTiers) {
    std::vector<float> y(1);
    f(quant_params(m.view()), m.view(), x, y);
    EXPECT_EQ(y[0], 176.0f);
  }
  // 8-bit: bytes 1, 2, 3, 4 in one word (low byte first), s = 2, b = 0.5, x = 1, 0, 0, 1 ...
  QuantStorage m8;
  m8.rows = 1, m8.cols = 64, m8.bits = 8, m8.group_size = 64;
  m8.w.assign(16, 0x04030201u);
  m8.scales = {f32_to_bf16_rne(2.0f)};
  m8.biases = {f32_to_bf16_rne(0.5f)};
  std::vector<float> x8(64, 0.0f);
  for (int c = 0; c < 64; c += 4) x8[c] = 1.0f, x8[c + 3] = 1.0f;  // picks 2*1+0.5 and 2*4+0.5
  for (Fn f : kTiers) {
    std::vector<float> y(1);
    f(quant_params(m8.view()), m8.view(), x8, y);
    EXPECT_EQ(y[0], 16 * (2.5f + 8.5f));
  }
}

void one_hot_reads_each_dequantised_weight(const std::vector<int>& group_sizes) {
  for (int bits : {2, 4, 8}) {
    for (int g : group_sizes) {
      const QuantStorage ws = random_quant(Rng(bits * 100 + g), 5, 384, bits, g);
      const QuantMatrix W = ws.view();
      for (int64_t c = 0; c < W.cols; ++c) {
        std::vector<float> x(W.cols, 0.0f);
        x[c] = 1.0f;
        for (int tier = 0; tier < 3; ++tier) {
          std::vector<float> y(W.rows);
          kTiers[tier](quant_params(W), W, x, y);
          for (int64_t r = 0; r < W.rows; ++r) {
            const int64_t gi = r * W.groups_per_row() + c / g;
            const float w = std::fma(float(quant_code(W.w + r * W.words_per_row(), c, bits)),
                                     bf16_to_f32(W.scales[gi]), bf16_to_f32(W.biases[gi]));
            ASSERT_EQ(y[r], w) << "bits " << bits << " G " << g << " tier " << tier << " r " << r << " c " << c;
          }
        }
      }
    }
  }
}

TEST(matvec_q, OneHotXReadsEachDequantisedWeight) {
  // x = e_c makes y[r] = q[r][c] s + b exactly in every tier (one non-zero term), so this pins
  // the packing order and the fast tier's lane permutation for every column, bit width and the
  // row blocks plus the tail row.
  one_hot_reads_each_dequantised_weight({64, 32});
}

TEST(matvec_q, EverySimdTarget) {
  // The same binary on each target the CPU offers (the dispatch picks only the best): the lane
  // permutation of each vector width (one-hot x, group sizes 32..128 and a chunk that spans
  // groups or a tail of words), the three-way check, NaN propagation.
  test::each_simd_target([] {
    one_hot_reads_each_dequantised_weight({32, 64, 128});
    test::expect_all_pass(matvec_q_check(4321, CheckScope::All));
    const QuantStorage ws = random_quant(Rng(31), 9, 256, 4);
    const QuantMatrix W = ws.view();
    std::vector<float> x = Rng(32).activations(256), y(W.rows);
    x[77] = std::numeric_limits<float>::quiet_NaN();
    matvec_q_fast(quant_params(W), W, x, y);
    for (float v : y) EXPECT_TRUE(std::isnan(v));
  });
}

TEST(matvec_q, F32TierMatchesEngineOrderBitExact) {
  // docs/ops/quantized.md "Canonical CPU order" written out: groups, words, codes low bits first; t = fma(q, s, b),
  // acc = fma(t, x, acc).
  const QuantStorage ws = random_quant(Rng(11), 3, 256, 4);
  const QuantMatrix W = ws.view();
  const std::vector<float> x = Rng(12).activations(256);
  std::vector<float> y(3);
  matvec_q_ref<float>(quant_params(W), W, x, y);
  for (int r = 0; r < 3; ++r) {
    float acc = 0;
    for (int g = 0; g < 4; ++g) {
      const float s = bf16_to_f32(W.scales[r * 4 + g]), b = bf16_to_f32(W.biases[r * 4 + g]);
      for (int p = 0; p < 8; ++p) {
        const uint32_t word = W.w[r * 32 + g * 8 + p];
        for (int n = 0; n < 8; ++n) acc = std::fma(std::fma(float((word >> (4 * n)) & 15u), s, b), x[g * 64 + p * 8 + n], acc);
      }
    }
    EXPECT_EQ(y[r], acc) << r;
  }
}

TEST(matvec_q, FastIndependentOfThreadCount) {
  // Rows are independent and each row's order is fixed: 1 thread and all threads agree exactly.
  const QuantStorage ws = random_quant(Rng(21), 1027, 2048, 4);
  const QuantMatrix W = ws.view();
  const std::vector<float> x = Rng(22).activations(2048);
  test::expect_thread_count_invariant(size_t(W.rows),
                                      [&](std::vector<float>& y) { matvec_q_fast(quant_params(W), W, x, y); });
}

TEST(matvec_q, RefIndependentOfThreadCount) {
  // Above kRefThreadTerms the reference spreads blocks of rows over threads; each row is still
  // summed by one thread in column order, so both tiers give the same bits with 1 or all threads.
  const QuantStorage ws = random_quant(Rng(23), 1027, 2048, 4);
  const QuantMatrix W = ws.view();
  ASSERT_GE(W.rows * W.cols, kRefThreadTerms);
  const std::vector<float> x = Rng(24).activations(2048);
  test::expect_thread_count_invariant(size_t(W.rows),
                                      [&](std::vector<float>& y) { matvec_q_ref<double>(quant_params(W), W, x, y); });
  test::expect_thread_count_invariant(size_t(W.rows),
                                      [&](std::vector<float>& y) { matvec_q_ref<float>(quant_params(W), W, x, y); });
}

TEST(matvec_q, NanPropagates) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int bits : {2, 4, 8}) {
    QuantStorage ws = random_quant(Rng(31), 6, 128, bits);
    const std::vector<float> x = Rng(32).activations(128);
    // A NaN scale in row 1 and a NaN bias in row 4 poison those rows only.
    ws.scales[1 * 2 + 1] = f32_to_bf16_rne(nan);
    ws.biases[4 * 2 + 0] = f32_to_bf16_rne(nan);
    for (int tier = 0; tier < 3; ++tier) {
      std::vector<float> y(6);
      kTiers[tier](quant_params(ws.view()), ws.view(), x, y);
      for (int r = 0; r < 6; ++r)
        EXPECT_EQ(std::isnan(y[r]), r == 1 || r == 4) << "bits " << bits << " tier " << tier << " r " << r;
      // A NaN in x poisons every row.
      std::vector<float> xn = x;
      xn[77] = nan;
      kTiers[tier](quant_params(ws.view()), ws.view(), xn, y);
      for (int r = 0; r < 6; ++r) EXPECT_TRUE(std::isnan(y[r])) << "bits " << bits << " tier " << tier << " r " << r;
    }
  }
}

TEST(matvec_q, BadArguments) {
  const QuantStorage ws = random_quant(Rng(41), 4, 128, 4);
  const QuantMatrix W = ws.view();
  std::vector<float> x(128), y(4);
  test::expect_error([&] { matvec_q_fast({4, 128, 4, 64}, W, std::vector<float>(127), y); },
                     "matvec_q: x has 127 elements, expected 128");
  std::vector<float> y3(3);
  test::expect_error([&] { matvec_q_ref<float>({4, 128, 4, 64}, W, x, y3); },
                     "matvec_q: y has 3 elements, expected 4");
  test::expect_error([&] { matvec_q_ref<double>({5, 128, 4, 64}, W, x, y); }, "params say [5, 128]");
  QuantMatrix bad = W;
  bad.bits = 3;
  test::expect_error([&] { matvec_q_fast({4, 128, 3, 64}, bad, x, y); }, "bits=3, expected 2, 4 or 8");
  bad = W;
  bad.cols = 96;
  test::expect_error([&] { matvec_q_fast({4, 96, 4, 64}, bad, std::vector<float>(96), y); },
                     "cols=96, expected a multiple of group_size=64");
  bad = W;
  bad.w = nullptr;
  test::expect_error([&] { matvec_q_fast({4, 128, 4, 64}, bad, x, y); }, "null data pointer");
}

TEST(matvec_q, ThreeWayAgreement) { test::expect_all_pass(matvec_q_check(1234, CheckScope::All)); }

}  // namespace
}  // namespace moe
