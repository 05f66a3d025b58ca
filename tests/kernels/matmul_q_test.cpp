#include <omp.h>

#include <cmath>
#include <limits>
#include <string>

#include "check/checks.h"
#include "core/rng.h"
#include "core/test_data.h"
#include "ops/matmul_q.h"
#include "ops/matvec_q.h"
#include "test_util.h"

namespace moe {
namespace {

using Fn = void (*)(const MatmulQParams&, const QuantMatrix&, std::span<const float>, std::span<float>);
const Fn kTiers[3] = {matmul_q_ref<double>, matmul_q_ref<float>, matmul_q_fast};

MatmulQParams params_of(const QuantMatrix& W, int64_t tokens) { return {quant_params(W), tokens}; }

TEST(matmul_q, HandComputed) {
  // Two rows of 64 4-bit codes q[c] = c % 16 (row 1: s = 1, b = 0; row 0: s = 0.5, b = -1) and
  // two tokens: x = 1 gives row sums 4 * 120 = 480 and 4 * (60 - 16) = 176; x = 2 doubles them.
  QuantStorage m;
  m.rows = 2, m.cols = 64, m.bits = 4, m.group_size = 64;
  for (int i = 0; i < 8; ++i) m.w.push_back(i % 2 ? 0xFEDCBA98u : 0x76543210u);
  m.w.insert(m.w.end(), m.w.begin(), m.w.end());
  m.scales = {f32_to_bf16_rne(0.5f), f32_to_bf16_rne(1.0f)};
  m.biases = {f32_to_bf16_rne(-1.0f), f32_to_bf16_rne(0.0f)};
  std::vector<float> X(128, 1.0f);
  std::fill(X.begin() + 64, X.end(), 2.0f);
  for (Fn f : kTiers) {
    std::vector<float> Y(4);
    f(params_of(m.view(), 2), m.view(), X, Y);
    EXPECT_EQ(Y, (std::vector<float>{176, 480, 352, 960}));
  }
}

TEST(matmul_q, RefRowTIsMatvecOfTokenT) {
  // The ref tiers are the matvec reference token by token: bit-identical rows.
  for (int bits : {2, 4, 8})
    for (int64_t tokens : {2, 7, 64}) {
      const QuantStorage ws = random_quant(Rng(bits + tokens), 37, 320, bits);
      const QuantMatrix W = ws.view();
      const std::vector<float> X = Rng(5).activations(tokens * W.cols);
      std::vector<float> Y64(tokens * W.rows), Y32(tokens * W.rows), y64(W.rows), y32(W.rows);
      matmul_q_ref<double>(params_of(W, tokens), W, X, Y64);
      matmul_q_ref<float>(params_of(W, tokens), W, X, Y32);
      const MatvecQParams mp{W.rows, W.cols, bits, 64};
      for (int64_t t = 0; t < tokens; ++t) {
        const std::span<const float> xt(X.data() + t * W.cols, W.cols);
        matvec_q_ref<double>(mp, W, xt, y64);
        matvec_q_ref<float>(mp, W, xt, y32);
        EXPECT_EQ(std::vector<float>(Y64.begin() + t * W.rows, Y64.begin() + (t + 1) * W.rows), y64) << t;
        EXPECT_EQ(std::vector<float>(Y32.begin() + t * W.rows, Y32.begin() + (t + 1) * W.rows), y32) << t;
      }
    }
}

TEST(matmul_q, FastRowTWithinBoundOfMatvec) {
  // The fast tier's row t against the truth of token t (matvec_q_ref<double>): within
  // gamma_{cols+1} sum |w x| + u |y| (derivation in spec/quant_dot_spec.h). Tile-crossing rows:
  // 1200 rows x 1024 cols is 512 rows per 2 MiB tile, 3 tiles, the last partial.
  const int64_t tokens = 7;
  const QuantStorage ws = random_quant(Rng(9), 1200, 1024, 4);
  const QuantMatrix W = ws.view();
  const std::vector<float> X = Rng(10).activations(tokens * W.cols);
  std::vector<float> Y(tokens * W.rows), y(W.rows);
  matmul_q_fast(params_of(W, tokens), W, X, Y);
  for (int64_t t = 0; t < tokens; ++t) {
    const std::span<const float> xt(X.data() + t * W.cols, W.cols);
    matvec_q_ref<double>({W.rows, W.cols, 4, 64}, W, xt, y);
    for (int64_t r = 0; r < W.rows; ++r) {
      double sum_abs = 0;
      for (int64_t c = 0; c < W.cols; ++c) {
        const int64_t g = r * W.groups_per_row() + c / 64;
        const double w = double(quant_code(W.w + r * W.words_per_row(), c, 4)) * bf16_to_f32(W.scales[g]) +
                         bf16_to_f32(W.biases[g]);
        sum_abs += std::fabs(w * xt[c]);
      }
      const double bound = gamma_n(double(W.cols + 1)) * sum_abs + kU32 * std::fabs(y[r]);
      ASSERT_LE(std::fabs(double(Y[t * W.rows + r]) - y[r]), bound) << "t " << t << " r " << r;
    }
  }
}

TEST(matmul_q, NanPropagatesToItsTokenAndRow) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int bits : {2, 4, 8}) {
    QuantStorage ws = random_quant(Rng(31), 6, 128, bits);
    ws.scales[2 * 2 + 1] = f32_to_bf16_rne(nan);  // row 2
    std::vector<float> X = Rng(32).activations(3 * 128);
    X[1 * 128 + 5] = nan;  // token 1
    for (int tier = 0; tier < 3; ++tier) {
      std::vector<float> Y(3 * 6);
      kTiers[tier](params_of(ws.view(), 3), ws.view(), X, Y);
      for (int t = 0; t < 3; ++t)
        for (int r = 0; r < 6; ++r)
          EXPECT_EQ(std::isnan(Y[t * 6 + r]), t == 1 || r == 2) << "bits " << bits << " tier " << tier << " t " << t
                                                                   << " r " << r;
    }
  }
}

TEST(matmul_q, ZeroTokensIsANoOp) {
  const QuantStorage ws = random_quant(Rng(3), 4, 64, 4);
  std::vector<float> X, Y;
  for (Fn f : kTiers) EXPECT_NO_THROW(f(params_of(ws.view(), 0), ws.view(), X, Y));
}

TEST(matmul_q, BadArguments) {
  const QuantStorage ws = random_quant(Rng(41), 4, 128, 4);
  const QuantMatrix W = ws.view();
  std::vector<float> X(2 * 128), Y(2 * 4), Xs(255), Ys(7);
  test::expect_error([&] { matmul_q_fast({{4, 128, 4, 64}, 2}, W, Xs, Y); }, "matmul_q: X has 255 elements, expected 256");
  test::expect_error([&] { matmul_q_ref<float>({{4, 128, 4, 64}, 2}, W, X, Ys); }, "matmul_q: Y has 7 elements, expected 8");
  test::expect_error([&] { matmul_q_ref<double>({{4, 128, 4, 64}, -1}, W, X, Y); }, "matmul_q: tokens=-1");
  test::expect_error([&] { matmul_q_fast({{4, 128, 8, 64}, 2}, W, X, Y); }, "params say [4, 128] bits=8");
  QuantMatrix bad = W;
  bad.group_size = 6;
  test::expect_error([&] { matmul_q_fast({{4, 128, 4, 6}, 2}, bad, X, Y); }, "matmul_q: W has group_size=6");
}

// Every element of the fast tier's Y against the truth (matmul_q_ref<double>): within
// gamma_{cols+1} sum |w x| + u |y| as in FastRowTWithinBoundOfMatvec; NaN where the truth is NaN,
// the same infinity where it is infinite.
void expect_fast_within_bound(const QuantMatrix& W, int64_t tokens, const std::vector<float>& X, const std::string& what) {
  std::vector<float> Y(tokens * W.rows, -1.0f), truth(Y.size());
  matmul_q_fast(params_of(W, tokens), W, X, Y);
  matmul_q_ref<double>(params_of(W, tokens), W, X, truth);
  std::vector<double> w(W.cols);
  for (int64_t r = 0; r < W.rows; ++r) {
    for (int64_t c = 0; c < W.cols; ++c) {
      const int64_t g = r * W.groups_per_row() + c / W.group_size;
      w[c] = double(quant_code(W.w + r * W.words_per_row(), c, W.bits)) * bf16_to_f32(W.scales[g]) +
             bf16_to_f32(W.biases[g]);
    }
    for (int64_t t = 0; t < tokens; ++t) {
      const float y = Y[t * W.rows + r], want = truth[t * W.rows + r];
      if (std::isnan(want) || std::isinf(want)) {
        if (std::isnan(want)) {
          ASSERT_TRUE(std::isnan(y)) << what << " t " << t << " r " << r;
        } else {
          ASSERT_EQ(y, want) << what << " t " << t << " r " << r;
        }
        continue;
      }
      double sum_abs = 0;
      for (int64_t c = 0; c < W.cols; ++c) sum_abs += std::fabs(w[c] * X[t * W.cols + c]);
      const double bound = gamma_n(double(W.cols + 1)) * sum_abs + kU32 * std::fabs(want);
      ASSERT_LE(std::fabs(double(y) - want), bound) << what << " t " << t << " r " << r << " y " << y << " truth " << want;
    }
  }
}

TEST(matmul_q, EverySimdTargetTokensTailsGroups) {
  // Token counts around the register tile (3/4 or 6/4 tokens) and the 64-token super-block; row
  // counts that leave partial row blocks; columns that leave words past the last whole chunk and
  // cross the 1024-column panel; every group size kind: powers of two below, at and above the
  // lanes' word span, and non-powers of two (words per group 12, 3; the column-order path).
  struct Shape {
    int bits, group_size;
    int64_t rows, cols;
  };
  const Shape shapes[] = {{4, 64, 13, 2112}, {2, 64, 7, 1088}, {8, 64, 5, 1088}, {4, 32, 7, 160},
                          {4, 128, 3, 1152}, {4, 96, 7, 288},  {8, 12, 5, 132},  {2, 16, 1, 48},
                          {8, 4, 2, 36}};
  test::each_simd_target([&] {
    for (const Shape& sh : shapes)
      for (int64_t tokens : {1, 2, 3, 15, 16, 17, 64, 65}) {
        const QuantStorage ws = random_quant(Rng(100 + tokens), sh.rows, sh.cols, sh.bits, sh.group_size);
        const std::vector<float> X = Rng(200 + tokens).activations(tokens * sh.cols);
        expect_fast_within_bound(ws.view(), tokens, X,
                                 std::to_string(sh.bits) + "-bit G=" + std::to_string(sh.group_size) + " " +
                                     std::to_string(sh.rows) + "x" + std::to_string(sh.cols) + " T=" +
                                     std::to_string(tokens));
      }
  });
}

TEST(matmul_q, EverySimdTargetNanInfPropagate) {
  // NaN in one token's x (in the chunked part and in the tail words), a NaN scale, an infinite
  // bias (every t of its group infinite), and an infinite x: each reaches exactly the outputs
  // the truth says, on every target.
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  test::each_simd_target([&] {
    for (int bits : {2, 4, 8})
      for (int64_t tokens : {2, 17, 65}) {
        const int64_t rows = 9, cols = 1088;  // 1088 = 1024 + one 64-column group: tail words
        QuantStorage ws = random_quant(Rng(41), rows, cols, bits);
        const int64_t gpr = cols / 64;
        ws.scales[2 * gpr + 3] = f32_to_bf16_rne(nan);
        ws.biases[5 * gpr + 16] = f32_to_bf16_rne(inf);  // the last group (tail words)
        std::vector<float> X = Rng(42).activations(tokens * cols);
        X[1 * cols + 5] = nan;
        X[(tokens - 1) * cols + cols - 1] = nan;
        X[0 * cols + 700] = inf;
        expect_fast_within_bound(ws.view(), tokens, X, std::to_string(bits) + "-bit T=" + std::to_string(tokens));
      }
  });
}

TEST(matmul_q, FastIndependentOfThreadAndTokenCount) {
  // Each (row, token) sum is formed the same way whatever the thread count, and whatever the
  // other tokens: one thread vs all, and token t alone in a 2-token call vs in a 65-token call.
  const QuantStorage ws = random_quant(Rng(51), 301, 2112, 4);
  const QuantMatrix W = ws.view();
  const std::vector<float> X = Rng(52).activations(65 * W.cols);
  std::vector<float> y1(65 * W.rows), yn(y1.size()), y2(2 * W.rows);
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  matmul_q_fast(params_of(W, 65), W, X, y1);
  omp_set_num_threads(saved);
  matmul_q_fast(params_of(W, 65), W, X, yn);
  EXPECT_EQ(y1, yn);
  matmul_q_fast(params_of(W, 2), W, std::span<const float>(X).subspan(63 * W.cols, 2 * W.cols), y2);
  EXPECT_EQ(y2, std::vector<float>(yn.begin() + 63 * W.rows, yn.end()));
}

TEST(matmul_q, ThreeWayAgreement) { test::expect_all_pass(matmul_q_check(4321, CheckScope::All)); }

}  // namespace
}  // namespace moe
