#include <cmath>
#include <string>
#include <utility>

#include "core/params.h"
#include "core/rng.h"
#include "core/test_data.h"
#include "ops/matvec_q.h"

namespace moe {
namespace {

// Per-row bound, both tiers (first order in u), with w[r][c] = q s + b the dequantised weight
// computed here in f64 (exact: q s has <= 16 significant bits, b is a bf16):
//  - each tier's term t = fma(q, s, b) is w rounded once to f32: |t - w| <= u |w|;
//  - t * x[c] summed over cols terms with one rounding per fma (or product and add), in any
//    order, has |error| <= gamma_cols * sum |t x|;
//  so |y_tier - y_exact| <= gamma_{cols+1} * sum_c |w x|. The truth (f64, error ~1e-16
//  relative to the same sum) is itself rounded to f32: + u |y_truth|. Products or partial sums
//  that land in the subnormal range lose up to half a subnormal spacing (2^-150) each beyond
//  the relative model: + (cols + 1) 2^-149 covers all cols fmas and the final rounding.
std::vector<double> row_bounds(const QuantMatrix& W, std::span<const float> x, std::span<const float> truth) {
  const int64_t groups = W.groups_per_row();
  const double gamma = gamma_n(double(W.cols + 1));
  std::vector<double> bound(W.rows);
  for (int64_t r = 0; r < W.rows; ++r) {
    const uint32_t* wr = W.w + r * W.words_per_row();
    double sum_abs = 0;
    for (int64_t g = 0; g < groups; ++g) {
      const double s = bf16_to_f32(W.scales[r * groups + g]), b = bf16_to_f32(W.biases[r * groups + g]);
      for (int64_t c = g * W.group_size; c < (g + 1) * W.group_size; ++c)
        sum_abs += std::fabs((double(quant_code(wr, c, W.bits)) * s + b) * double(x[c]));
    }
    bound[r] = gamma * sum_abs + kU32 * std::fabs(double(truth[r])) + double(W.cols + 1) * 0x1.0p-149;
  }
  return bound;
}

// The fast tier runs on the whole matrix (its row blocking and threading at the real size);
// the scalar tiers, ~20 ns per weight, run on windows of `window` rows at the start, the middle
// and the end (the last rows are the fast tier's tail), so a real shape costs milliseconds.
// The op is row-independent: a row's value does not depend on which rows are computed with it.
// `label` says how many rows were compared when that is not all of them.
CheckResult run_case(std::string label, const MatvecQParams& p, uint64_t seed, int64_t window = 64) {
  Rng rng(seed);
  const QuantStorage ws = random_quant(rng.fork(1), p.rows, p.cols, p.bits, p.group_size);
  const QuantMatrix W = ws.view();
  const std::vector<float> x = rng.fork(2).activations(p.cols);
  std::vector<std::pair<int64_t, int64_t>> windows;  // [first row, row count)
  if (p.rows <= 3 * window) {
    windows.push_back({0, p.rows});
  } else {
    windows = {{0, window}, {(p.rows - window) / 2, window}, {p.rows - window, window}};
    label += " (rows compared: 3 windows of " + std::to_string(window) + ")";
  }
  std::vector<float> fast_all(p.rows);
  CheckResult res{"matvec_q", label, params_to_string(p), seed};
  res.fast.seconds = time_call([&] { matvec_q_fast(p, W, x, fast_all); });

  std::vector<float> truth, r32, fast;
  std::vector<double> bound;
  for (auto [r0, n] : windows) {
    const QuantMatrix Wb = W.row_block(r0, n);
    const MatvecQParams pb{n, p.cols, p.bits, p.group_size};
    std::vector<float> t(n), f32(n);
    res.truth_seconds += time_call([&] { matvec_q_ref<double>(pb, Wb, x, t); });
    res.ref32.seconds += time_call([&] { matvec_q_ref<float>(pb, Wb, x, f32); });
    const std::vector<double> b = row_bounds(Wb, x, t);
    truth.insert(truth.end(), t.begin(), t.end());
    r32.insert(r32.end(), f32.begin(), f32.end());
    fast.insert(fast.end(), fast_all.begin() + r0, fast_all.begin() + r0 + n);
    bound.insert(bound.end(), b.begin(), b.end());
  }
  res.ref32.add("y", truth, r32, bound);
  res.fast.add("y", truth, fast, bound);
  return res;
}

struct Shape {
  const char* label;
  int64_t rows, cols;
  int bits;
};

}  // namespace

std::vector<CheckResult> matvec_q_check(uint64_t seed, CheckScope scope) {
  std::vector<CheckResult> out;
  if (scope_has_remainders(scope)) {
    // Columns: one group, two groups, a 4096-wide row plus one group; rows around the fast
    // tier's 4-row blocks. Every bit width; group sizes 32 (portable path) and 128 as well.
    uint64_t k = 0;
    for (int bits : {2, 4, 8})
      for (int64_t cols : {64, 128, 4096 + 64})
        for (int64_t rows : {1, 31, 33, 67}) {
          const std::string label = "remainder " + std::to_string(rows) + "x" + std::to_string(cols) + " " +
                                    std::to_string(bits) + "-bit";
          out.push_back(run_case(label, {rows, cols, bits, 64}, seed + ++k));
        }
    for (int bits : {2, 4, 8}) {
      out.push_back(run_case("remainder G=32", {33, 96, bits, 32}, seed + ++k));
      out.push_back(run_case("remainder G=128", {33, 384, bits, 128}, seed + ++k));
    }
  }
  if (scope_has_real(scope)) {
    // docs/ops/verification.md "Shapes to cover" (docs/ops/formats.md "Tensor catalog"; out x in).
    // lm_head is [248320, d]: a block of 8192 rows.
    const Shape shapes[] = {
        {"A17B full q_proj", 16384, 4096, 4},
        {"A17B full k_proj/v_proj", 512, 4096, 4},
        {"A17B o_proj/out_proj", 4096, 8192, 4},
        {"A17B linear in_proj_qkv", 12288, 4096, 4},
        {"A17B linear in_proj_z", 8192, 4096, 4},
        {"A17B linear in_proj_a/b", 64, 4096, 4},
        {"A17B router mlp.gate", 512, 4096, 4},
        {"A17B shared gate/up, expert gate/up", 1024, 4096, 4},
        {"A17B shared down, expert down", 4096, 1024, 4},
        {"A17B expert gate/up 2-bit", 1024, 4096, 2},
        {"A17B expert down 2-bit", 4096, 1024, 2},
        {"A17B shared_expert_gate", 1, 4096, 4},
        {"A17B lm_head rows 0..8191 of 248320", 8192, 4096, 4},
        {"A3B linear in_proj_qkv / full q_proj", 8192, 2048, 4},
        {"A3B full k_proj/v_proj", 512, 2048, 4},
        {"A3B o_proj/out_proj", 2048, 4096, 4},
        {"A3B linear in_proj_z", 4096, 2048, 4},
        {"A3B linear in_proj_a/b", 32, 2048, 4},
        {"A3B router mlp.gate 8-bit", 256, 2048, 8},
        {"A3B shared/expert gate/up", 512, 2048, 4},
        {"A3B shared/expert down", 2048, 512, 4},
        {"A3B shared_expert_gate 8-bit", 1, 2048, 8},
        {"A3B lm_head rows 0..8191 of 248320", 8192, 2048, 4},
    };
    uint64_t k = 1000;
    for (const Shape& s : shapes) out.push_back(run_case(s.label, {s.rows, s.cols, s.bits, 64}, seed + ++k));
  }
  return out;
}

}  // namespace moe
