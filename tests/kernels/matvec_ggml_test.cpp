#include "ops/matvec_ggml.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "check/checks.h"
#include "core/check_util.h"
#include "core/ggml_blocks.h"
#include "core/half.h"
#include "core/math.h"
#include "spec/matvec_ggml_spec.h"
#include "test_util.h"

namespace moe {
namespace {

constexpr uint32_t kQ4_0 = 2, kQ8_0 = 8, kQ4_K = 12, kQ6_K = 14;

void run_tier(int tier, const MatvecGgmlParams& p, const BlockMatrix& W, std::span<const float> x,
              std::span<float> y) {
  if (tier == 0) matvec_ggml_ref<double>(p, W, x, y);
  if (tier == 1) matvec_ggml_ref<float>(p, W, x, y);
  if (tier == 2) matvec_ggml_fast(p, W, x, y);
}

// One q4_0 block: d, then value j in the low nibble of byte j, value j + 16 in its high nibble.
std::vector<uint8_t> q4_0_block(double d, const int (&codes)[32]) {
  std::vector<uint8_t> b(18);
  const uint16_t h = f16_from_double(d);
  std::memcpy(b.data(), &h, 2);
  for (int j = 0; j < 16; ++j) b[2 + j] = uint8_t(codes[j] | codes[j + 16] << 4);
  return b;
}

TEST(matvec_ggml, HandComputedQ4_0) {
  // d = 0.5, codes 0..15 then 15..0: W = 0.5 (q - 8). x = 1 at columns 0, 17 and 31, 2 at 3:
  // y = 0.5 (-8) + 2 * 0.5 (-5) + 0.5 (14 - 8) + 0.5 (0 - 8) = -4 - 5 + 3 - 4 = -10.
  int codes[32];
  for (int j = 0; j < 16; ++j) codes[j] = j, codes[16 + j] = 15 - j;
  const std::vector<uint8_t> W = q4_0_block(0.5, codes);
  std::vector<float> x(32, 0.0f);
  x[0] = 1, x[3] = 2, x[17] = 1, x[31] = 1;
  for (int tier = 0; tier < 3; ++tier) {
    std::vector<float> y(1);
    run_tier(tier, {kQ4_0, 1, 32, 1}, {kQ4_0, W.data(), 1, 32}, x, y);
    EXPECT_EQ(y[0], -10.0f) << "tier " << tier;
  }
}

TEST(matvec_ggml, F16FromDoubleRoundTripsEveryFiniteHalf) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if (((h >> 10) & 31) == 31) continue;  // Inf, NaN
    const double v = f16_to_double(uint16_t(h));
    const uint16_t back = f16_from_double(v);
    if (v == 0) EXPECT_EQ(back & 0x7FFF, 0) << h;
    else EXPECT_EQ(back, h) << h;
  }
  EXPECT_EQ(f16_from_double(1.0 + 0x1.0p-11), 0x3C00);            // a tie goes to even
  EXPECT_EQ(f16_from_double(1.0 + 3 * 0x1.0p-11), 0x3C02);
  EXPECT_EQ(f16_from_double(65520.0), 0x7C00);
}

TEST(matvec_ggml, PartsSumToTheValues) {
  // a + b equals the decoded value for every format the op takes, on real-looking blocks.
  for (uint32_t type : matvec_ggml_types()) {
    const MatvecGgmlParams p{type, 3, 512, 1};
    const MatvecGgmlInputs in = matvec_ggml_inputs(p, 5, false);
    std::vector<double> v(3 * 512), a(v.size()), b(v.size());
    ggml_dequant_f64(type, in.W, int64_t(v.size()), v.data());
    ggml_dequant_parts(type, in.W, int64_t(v.size()), a.data(), b.data());
    std::vector<float> f(v.size());
    ggml_dequant_f32(type, in.W, int64_t(v.size()), f.data());
    for (size_t i = 0; i < v.size(); ++i) {
      ASSERT_EQ(a[i] + b[i], v[i]) << ggml_block_format(type)->name << " " << i;
      ASSERT_EQ(f[i], float(v[i])) << ggml_block_format(type)->name << " " << i;
      ASSERT_TRUE(std::isfinite(v[i]) && std::fabs(v[i]) < 1.0) << ggml_block_format(type)->name << " " << v[i];
    }
  }
}

TEST(matvec_ggml, TokensAreIndependentMatvecs) {
  // Row t of Y is the one-token product of row t of X, bit for bit, in every tier.
  for (uint32_t type : {kQ4_K, kQ8_0}) {
    const MatvecGgmlParams p{type, 9, 512, 3};
    const MatvecGgmlInputs in = matvec_ggml_inputs(p, 11, false);
    for (int tier = 0; tier < 3; ++tier) {
      std::vector<float> Y(27), y(9);
      run_tier(tier, p, in.view(p), in.x, Y);
      for (int64_t t = 0; t < 3; ++t) {
        run_tier(tier, {type, 9, 512, 1}, in.view(p), std::span<const float>(in.x).subspan(size_t(t * 512), 512), y);
        for (int64_t r = 0; r < 9; ++r) EXPECT_EQ(Y[size_t(t * 9 + r)], y[size_t(r)]) << tier << " " << t << " " << r;
      }
    }
  }
}

TEST(matvec_ggml, RefIndependentOfThreadCount) {
  // Above kRefThreadTerms the reference spreads blocks of rows over threads; each row is still
  // summed by one thread in column order: the same bits with 1 or all threads, in both its tiers.
  const MatvecGgmlParams p{kQ4_K, 515, 1024, 2};
  ASSERT_GE(p.rows * p.cols * p.tokens, kRefThreadTerms);
  const MatvecGgmlInputs in = matvec_ggml_inputs(p, 12, false);
  for (int tier = 0; tier < 2; ++tier) {
    SCOPED_TRACE(test::kTierNames[tier]);
    test::expect_thread_count_invariant(size_t(p.rows * p.tokens),
                                        [&](std::vector<float>& y) { run_tier(tier, p, in.view(p), in.x, y); });
  }
}

TEST(matvec_ggml, F32TierIsTheFusedChainOverRoundedWeights) {
  const MatvecGgmlParams p{kQ6_K, 4, 768, 1};
  const MatvecGgmlInputs in = matvec_ggml_inputs(p, 3, false);
  std::vector<float> w(size_t(4 * 768)), y(4);
  ggml_dequant_f32(kQ6_K, in.W, 4 * 768, w.data());
  matvec_ggml_ref<float>(p, in.view(p), in.x, y);
  for (int64_t r = 0; r < 4; ++r) {
    float acc = 0;
    for (int64_t c = 0; c < 768; ++c) acc = std::fma(w[size_t(r * 768 + c)], in.x[size_t(c)], acc);
    EXPECT_EQ(y[size_t(r)], acc) << r;
  }
}

TEST(matvec_ggml, FastTierDecodesEachWeightAsTheF32Tier) {
  // x one-hot at column c: every tier returns W[r][c] exactly (products with 0, sums with 0), so
  // the fast tier's own decoders (q4_0, q8_0, q4_K, q6_K) must give ggml's f32 value of each weight,
  // in every SIMD variant of its row loop (AVX-512, AVX2, baseline: each pinned in turn).
  test::each_simd_target([] {
    for (uint32_t type : matvec_ggml_types()) {
      const MatvecGgmlParams p{type, 3, 512, 1};
      const MatvecGgmlInputs in = matvec_ggml_inputs(p, 9, false);
      std::vector<float> w(3 * 512), y(3), x(512);
      ggml_dequant_f32(type, in.W, 3 * 512, w.data());
      for (int64_t c = 0; c < 512; ++c) {
        std::fill(x.begin(), x.end(), 0.0f);
        x[size_t(c)] = 1.0f;
        matvec_ggml_fast(p, in.view(p), x, y);
        for (int64_t r = 0; r < 3; ++r)
          ASSERT_EQ(y[size_t(r)], w[size_t(r * 512 + c)]) << ggml_block_format(type)->name << " r " << r << " c " << c;
      }
    }
  });
}

TEST(matvec_ggml, FastTierPassesTheCheckOnEverySimdTarget) {
  test::each_simd_target([] { test::expect_all_pass(matvec_ggml_check(3, CheckScope::Remainders)); });
}

// The fused 4-bit loops prescale x by up to 2^86 and take products near 2^-125 (ops/matvec_ggml_
// fast_x86.cpp): x at the edges of the range they accept and past it (where the decode-then-dot
// path takes over), sprinkled among ordinary activations or as the whole vector, stays within
// the fast tier's bound on every SIMD target. Past the edges the fused arithmetic would overflow
// (x >= 2^42: Inf) or go subnormal (all x near 2^-100: absolute errors far above the bound).
TEST(matvec_ggml, FastTierAtTheEdgesOfTheFusedRange) {
  test::each_simd_target([] {
    for (uint32_t type : {kQ4_0, kQ4_K})
      for (float edge : {0x1.0p-62f, 0x1.0p-100f, 0x1.fffffep40f, 0x1.8p42f})
        for (bool whole : {false, true}) {
          const MatvecGgmlParams p{type, 5, 2048 + 256 + 32 * (type == kQ4_0), 2};
          MatvecGgmlInputs in = matvec_ggml_inputs(p, 21, false);
          for (size_t i = 0; i < in.x.size(); ++i)
            if (whole) in.x[i] = edge * (1.0f + float(i % 97) / 97.0f) * (i % 2 ? -1.0f : 1.0f);
            else if (i % 7 == 0) in.x[i] = i % 2 ? -edge : edge;
          std::vector<float> truth(size_t(p.rows * p.tokens)), y(truth.size());
          matvec_ggml_ref<double>(p, in.view(p), in.x, truth);
          matvec_ggml_fast(p, in.view(p), in.x, y);
          const std::vector<double> bound =
              matvec_ggml_bound(p, in.view(p), in.x, truth, matvec_ggml_fast_model(type));
          for (size_t j = 0; j < y.size(); ++j)
            ASSERT_LE(std::fabs(double(y[j]) - double(truth[j])), bound[j])
                << ggml_block_format(type)->name << " edge " << edge << (whole ? " whole" : " sprinkled") << " y["
                << j << "]";
        }
  });
}

// An infinite x: every tier's y is infinite or NaN where the reference's is (the fused loops
// hand it to the decode-then-dot path: their 0 x Inf would be NaN where -8 d x is infinite).
TEST(matvec_ggml, InfiniteXAsInTheReference) {
  test::each_simd_target([] {
    for (uint32_t type : {kQ4_0, kQ4_K}) {
      const MatvecGgmlParams p{type, 6, 512, 1};
      MatvecGgmlInputs in = matvec_ggml_inputs(p, 4, false);
      in.x[77] = std::numeric_limits<float>::infinity();
      std::vector<float> r32(6), fast(6);
      matvec_ggml_ref<float>(p, in.view(p), in.x, r32);
      matvec_ggml_fast(p, in.view(p), in.x, fast);
      for (int r = 0; r < 6; ++r) {
        EXPECT_EQ(std::isnan(fast[size_t(r)]), std::isnan(r32[size_t(r)])) << r;
        if (std::isinf(r32[size_t(r)])) {
          EXPECT_EQ(fast[size_t(r)], r32[size_t(r)]) << r;
        }
      }
    }
  });
}

TEST(matvec_ggml, NanPropagation) {
  const MatvecGgmlParams p{kQ4_0, 4, 64, 1};
  MatvecGgmlInputs in = matvec_ggml_inputs(p, 2, false);
  const uint16_t nan = 0x7E00;
  std::memcpy(&in.W[size_t(2 * 36 + 18)], &nan, 2);  // row 2, second block's d
  std::vector<float> y(4);
  for (int tier = 0; tier < 3; ++tier) {
    run_tier(tier, p, in.view(p), in.x, y);
    for (int64_t r = 0; r < 4; ++r) EXPECT_EQ(std::isnan(y[size_t(r)]), r == 2) << "tier " << tier << " r " << r;
  }
  in = matvec_ggml_inputs(p, 2, false);
  in.x[40] = std::numeric_limits<float>::quiet_NaN();
  for (int tier = 0; tier < 3; ++tier) {
    run_tier(tier, p, in.view(p), in.x, y);
    for (int64_t r = 0; r < 4; ++r) EXPECT_TRUE(std::isnan(y[size_t(r)])) << "tier " << tier << " r " << r;
  }
}

TEST(matvec_ggml, BadArgumentsAreRejected) {
  const MatvecGgmlParams p{kQ4_0, 2, 64, 1};
  const MatvecGgmlInputs in = matvec_ggml_inputs(p, 1, false);
  std::vector<float> y(2), x(64);
  test::expect_error([&] { matvec_ggml_ref<double>({4, 2, 64, 1}, {4, in.W.data(), 2, 64}, x, y); },
                     "type 4 is not a ggml format");
  test::expect_error([&] { matvec_ggml_ref<double>({kQ4_0, 2, 48, 1}, {kQ4_0, in.W.data(), 2, 48}, x, y); },
                     "multiple of q4_0's block of 32");
  test::expect_error([&] { matvec_ggml_fast(p, {kQ8_0, in.W.data(), 2, 64}, x, y); }, "params say type 2");
  test::expect_error([&] { matvec_ggml_ref<float>(p, in.view(p), std::span<const float>(x).first(63), y); },
                     "X");
  test::expect_error([&] { matvec_ggml_ref<float>({kQ4_0, 2, 64, -1}, in.view(p), x, y); }, "tokens=-1");
}

TEST(matvec_ggml, TheBoundSeesAForgottenMin) {
  // A q4_K kernel that drops the blocks' - dmin m term (sums d sc q x only) is outside the bound of
  // every row of a real-width shape, by far: the bound is not vacuous at cols 2048.
  const MatvecGgmlParams p{kQ4_K, 8, 2048, 1};
  const MatvecGgmlInputs in = matvec_ggml_inputs(p, 7, false);
  std::vector<float> truth(8);
  matvec_ggml_ref<double>(p, in.view(p), in.x, truth);
  const std::vector<double> bound = matvec_ggml_bound(p, in.view(p), in.x, truth, cpu_f32_model());
  std::vector<double> a(8 * 2048), b(a.size());
  ggml_dequant_parts(kQ4_K, in.W, int64_t(a.size()), a.data(), b.data());
  for (int64_t r = 0; r < 8; ++r) {
    double wrong = 0;
    for (int64_t c = 0; c < 2048; ++c) wrong += a[size_t(r * 2048 + c)] * in.x[size_t(c)];
    EXPECT_GT(std::fabs(wrong - truth[size_t(r)]), 10 * bound[size_t(r)]) << r;
  }
}

TEST(matvec_ggml, ThreeTierCheckPasses) { test::expect_all_pass(matvec_ggml_check(1, CheckScope::All)); }

}  // namespace
}  // namespace moe
