// The three-way check of a quantized dot product (matvec_q, matmul_q: spec/quant_dot_spec.h). The
// fast tier runs on the whole matrix (its row blocking and threading at the real size); the
// scalar tiers, ~20 ns per weight and token, on windows of v.window rows at the start, the middle
// and the end (the fast tier's tail), all tokens, so a real shape costs milliseconds. Rows are
// independent: a window's values are those of the full run. The label says how many rows were
// compared when that is not all of them.
#pragma once
#include <functional>
#include <string>
#include <utility>

#include "core/check_util.h"
#include "spec/quant_dot_spec.h"

namespace moe {

// One tier: Y [tokens, W.rows] from W and X [tokens, W.cols].
using QuantDotTier = std::function<void(const QuantMatrix& W, std::span<const float> x, std::span<float> y)>;

inline CheckResult quant_dot_check(const char* op, const char* output, std::string label, std::string params,
                                   uint64_t seed, const QuantDotVariant& v, const QuantDotInputs& in,
                                   const QuantDotTier& truth_tier, const QuantDotTier& ref32_tier,
                                   const QuantDotTier& fast_tier) {
  const QuantMatrix W = in.W.view();
  const int64_t rows = W.rows, tokens = int64_t(in.x.size()) / W.cols, w = v.window;
  std::vector<std::pair<int64_t, int64_t>> windows{{0, rows}};  // [first row, row count)
  if (rows > 3 * w) {
    windows = {{0, w}, {(rows - w) / 2, w}, {rows - w, w}};
    label += " (rows compared: 3 windows of " + std::to_string(w) + ")";
  }
  CheckResult res{op, std::move(label), std::move(params), seed};
  std::vector<float> fast_all(size_t(tokens * rows)), truth, r32, fast;
  res.fast.seconds = time_call([&] { fast_tier(W, in.x, fast_all); });
  std::vector<double> bound;
  for (auto [r0, n] : windows) {
    const QuantMatrix Wb = W.row_block(r0, n);
    std::vector<float> t(size_t(tokens * n)), f32(t.size());
    res.truth_seconds += time_call([&] { truth_tier(Wb, in.x, t); });
    res.ref32.seconds += time_call([&] { ref32_tier(Wb, in.x, f32); });
    const std::vector<double> b =
        v.exact ? std::vector<double>(t.size(), 0.0) : quant_dot_bound(Wb, in.x, t, cpu_f32_model());
    truth.insert(truth.end(), t.begin(), t.end());
    r32.insert(r32.end(), f32.begin(), f32.end());
    bound.insert(bound.end(), b.begin(), b.end());
    for (int64_t tok = 0; tok < tokens; ++tok)
      fast.insert(fast.end(), fast_all.begin() + tok * rows + r0, fast_all.begin() + tok * rows + r0 + n);
  }
  res.ref32.add(output, truth, r32, bound);
  res.fast.add(output, truth, fast, bound);
  return res;
}

}  // namespace moe
