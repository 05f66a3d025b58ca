#include <cmath>
#include <string>
#include <utility>

#include "core/params.h"
#include "core/rng.h"
#include "core/test_data.h"
#include "ops/matmul_q.h"

namespace moe {
namespace {

// Bound per element (t, r), both tiers, as for matvec_q (check/matvec_q_check.cpp): with
// w = q s + b the dequantised weight in f64 (exact), each tier's term is w rounded once to f32
// (|t - w| <= u |w|) and the cols products are summed with one rounding per operation in some
// order (the reference's fma chain, or the fast tier's lanes, panels and tiles): |err| <= gamma_cols sum |t x|,
// so |Y_tier - Y_exact| <= gamma_{cols+1} sum_c |w[r][c] X[t][c]|; + u |Y_truth| for the
// truth's rounding to f32; + (cols + 1) 2^-149 for results and partial sums in the subnormal
// range (half a subnormal spacing per operation).
std::vector<double> bounds(const QuantMatrix& W, int64_t tokens, std::span<const float> X,
                           std::span<const float> truth) {
  const int64_t groups = W.groups_per_row();
  const double gamma = gamma_n(double(W.cols + 1));
  std::vector<double> bound(tokens * W.rows), w(W.cols);
  for (int64_t r = 0; r < W.rows; ++r) {
    const uint32_t* wr = W.w + r * W.words_per_row();
    for (int64_t c = 0; c < W.cols; ++c) {
      const int64_t g = r * groups + c / W.group_size;
      w[c] = double(quant_code(wr, c, W.bits)) * bf16_to_f32(W.scales[g]) + bf16_to_f32(W.biases[g]);
    }
    for (int64_t t = 0; t < tokens; ++t) {
      double sum_abs = 0;
      for (int64_t c = 0; c < W.cols; ++c) sum_abs += std::fabs(w[c] * double(X[t * W.cols + c]));
      bound[t * W.rows + r] =
          gamma * sum_abs + kU32 * std::fabs(double(truth[t * W.rows + r])) + double(W.cols + 1) * 0x1.0p-149;
    }
  }
  return bound;
}

// The fast tier runs on the whole matrix; the scalar tiers (~20 ns per weight and token) on
// windows of `window` rows at the start, middle and end (the end is the last, partial tile),
// all tokens. Rows and tokens are independent, so a window's values are those of the full run.
CheckResult run_case(std::string label, const MatmulQParams& p, uint64_t seed, int64_t window) {
  Rng rng(seed);
  const QuantStorage ws = random_quant(rng.fork(1), p.rows, p.cols, p.bits, p.group_size);
  const QuantMatrix W = ws.view();
  const std::vector<float> X = rng.fork(2).activations(p.tokens * p.cols);
  std::vector<std::pair<int64_t, int64_t>> windows;  // [first row, row count)
  if (p.rows <= 3 * window) {
    windows.push_back({0, p.rows});
  } else {
    windows = {{0, window}, {(p.rows - window) / 2, window}, {p.rows - window, window}};
    label += " (rows compared: 3 windows of " + std::to_string(window) + ")";
  }
  std::vector<float> fast_all(p.tokens * p.rows);
  CheckResult res{"matmul_q", label, params_to_string(p), seed};
  res.fast.seconds = time_call([&] { matmul_q_fast(p, W, X, fast_all); });

  std::vector<float> truth, r32, fast;
  std::vector<double> bound;
  for (auto [r0, n] : windows) {
    const QuantMatrix Wb = W.row_block(r0, n);
    const MatmulQParams pb{p.tokens, n, p.cols, p.bits, p.group_size};
    std::vector<float> t(p.tokens * n), f32(p.tokens * n);
    res.truth_seconds += time_call([&] { matmul_q_ref<double>(pb, Wb, X, t); });
    res.ref32.seconds += time_call([&] { matmul_q_ref<float>(pb, Wb, X, f32); });
    const std::vector<double> b = bounds(Wb, p.tokens, X, t);
    truth.insert(truth.end(), t.begin(), t.end());
    r32.insert(r32.end(), f32.begin(), f32.end());
    bound.insert(bound.end(), b.begin(), b.end());
    for (int64_t tok = 0; tok < p.tokens; ++tok)
      fast.insert(fast.end(), fast_all.begin() + tok * p.rows + r0, fast_all.begin() + tok * p.rows + r0 + n);
  }
  res.ref32.add("Y", truth, r32, bound);
  res.fast.add("Y", truth, fast, bound);
  return res;
}

struct Shape {
  const char* label;
  int64_t tokens, rows, cols;
  int bits;
  int64_t window;
};

}  // namespace

std::vector<CheckResult> matmul_q_check(uint64_t seed, CheckScope scope) {
  std::vector<CheckResult> out;
  uint64_t k = 0;
  if (scope_has_remainders(scope)) {
    // Tokens 2, 7, 64; rows around 1 and odd counts; one group, two, 4096 + one group.
    for (int bits : {2, 4, 8})
      for (int64_t tokens : {2, 7, 64})
        for (int64_t cols : {64, 128, 4096 + 64})
          for (int64_t rows : {1, 31, 67}) {
            if (tokens == 64 && cols > 128) continue;  // the real shapes below cover T = 64 x 4096
            const std::string label = "remainder T=" + std::to_string(tokens) + " " + std::to_string(rows) + "x" +
                                      std::to_string(cols) + " " + std::to_string(bits) + "-bit";
            out.push_back(run_case(label, {tokens, rows, cols, bits, 64}, seed + ++k, 64));
          }
    out.push_back(run_case("remainder G=32", {7, 33, 96, 4, 32}, seed + ++k, 64));
    out.push_back(run_case("remainder G=128", {7, 33, 384, 4, 128}, seed + ++k, 64));
  }
  if (scope_has_real(scope)) {
    // docs/ops/verification.md "Shapes to cover" (docs/ops/formats.md "Tensor catalog") with prefill
    // token counts; large ones on row windows.
    const Shape shapes[] = {
        {"A17B linear in_proj_qkv, T=64", 64, 12288, 4096, 4, 8},
        {"A17B o_proj/out_proj, T=7", 7, 4096, 8192, 4, 16},
        {"A17B expert gate/up, T=7", 7, 1024, 4096, 4, 16},
        {"A17B expert down 2-bit, T=2", 2, 4096, 1024, 2, 32},
        {"A3B linear in_proj_qkv, T=64", 64, 8192, 2048, 4, 8},
        {"A3B router mlp.gate 8-bit, T=64", 64, 256, 2048, 8, 8},
        {"A3B expert gate/up, T=7", 7, 512, 2048, 4, 16},
        {"A3B lm_head rows 0..8191 of 248320, T=2", 2, 8192, 2048, 4, 32},
    };
    k = 1000;
    for (const Shape& s : shapes)
      out.push_back(run_case(s.label, {s.tokens, s.rows, s.cols, s.bits, 64}, seed + ++k, s.window));
  }
  return out;
}

}  // namespace moe
