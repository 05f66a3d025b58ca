#include <cmath>
#include <string>

#include "compare/cases/bound_mode.h"
#include "compare/cases/case_util.h"
#include "compare/cases/instances.h"
#include "compare/cases/real_shapes.h"
#include "core/rng.h"
#include "ops/matvec_bf16.h"

namespace moe::compare {

OpCase matvec_bf16_instance(const std::string& label, uint64_t seed, const MatvecBf16Params& p,
                            std::span<const bf16> W, std::span<const float> x) {
  const int64_t rows = p.rows, cols = p.cols;
  OpCase c = new_case("matvec_bf16", label, seed);
  set_vars(c, p);
  std::vector<float> y(static_cast<size_t>(rows));
  for_blocks(rows, 256, [&](int64_t r0, int64_t r1) {
    MatvecBf16Params pb = p;
    pb.rows = r1 - r0;
    matvec_bf16_ref<double>(pb, std::span<const bf16>(W).subspan(size_t(r0 * cols), size_t((r1 - r0) * cols)), x,
                            std::span<float>(y).subspan(size_t(r0), size_t(r1 - r0)));
  });
  c.tensors["W"] = bf16_tensor(W);
  c.tensors["x"] = f32_tensor(x);
  c.tensors["y"] = output_f32(rows);
  // Bound per row in f32 accumulation, any summation order, fused or not: a product w*x (8 x 24
  // significant bits) is exact when fused and rounded once otherwise, and the cols terms reach
  // the result through at most cols - 1 additions (a subgroup tree adds lanes' partial sums,
  // still one binary tree over the terms; empty lanes add an exact 0), so |y - sum w x| <=
  // gamma_cols * sum |w x| (summed in f64, where each product is exact). The truth is rounded to
  // f32 once more: + u |y|. Floor: the smallest normal, for results near underflow (and a
  // device that flushes subnormal partials to zero).
  OutputSpec s;
  s.name = "y", s.kind = Kind::Reduction;
  const double g = sum_gamma(double(cols));
  s.bound.assign(size_t(rows), 0.0);
  for_blocks(rows, 256, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      double abs_sum = 0;
      for (int64_t col = 0; col < cols; ++col)
        abs_sum += std::fabs(double(bf16_to_f32(W[size_t(r * cols + col)])) * double(x[size_t(col)]));
      s.bound[size_t(r)] = g * abs_sum + kU32 * std::fabs(double(y[size_t(r)])) + kMinNormal32;
    }
  });
  c.outputs["y"] = s;
  c.truth["y"] = widen(y);
  return c;
}

namespace {

// ---- matvec_bf16: router-gate-like weights N(0, 1/cols) in bf16, activations with outlier
// channels (as the op's self-check).
OpCase matvec_bf16_case(const std::string& label, int64_t rows, int64_t cols, uint64_t seed) {
  MatvecBf16Params p;
  p.rows = rows, p.cols = cols;
  Rng rng(seed);
  const std::vector<bf16> W = rng.fork(1).bf16_normal_vec(rows * cols, 1.0 / std::sqrt(double(cols)));
  const std::vector<float> x = rng.fork(2).activations(cols);
  return matvec_bf16_instance(label, seed, p, W, x);
}

}  // namespace

std::vector<OpCase> matvec_bf16_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  // Remainders: odd column counts put rows on odd element offsets (a row starting in a word's
  // high half; 63 = 7 x 9 is odd but a multiple of 7 and 9: a wrong octet test); rows around a few rows per workgroup.
  if (rem)
    for (int64_t cols : {1, 17, 33, 63, 67, 4099})
      for (int64_t rows : {1, 3, 33})
        out.push_back(matvec_bf16_case("remainder " + std::to_string(rows) + "x" + std::to_string(cols), rows, cols,
                                       seed + uint64_t(rows * 10007 + cols)));
  // Past the 8192-float input caches engines size for: 8192 + 65 and 16384 + 27 columns (odd:
  // rows start in a word's high half), and 16384 + 8 (whole 8-element octets, a kernel's vector
  // path, in more than one step). Few rows, so cheap.
  if (rem)
    for (int64_t cols : {8257, 16411, 16392})
      out.push_back(matvec_bf16_case("remainder 3x" + std::to_string(cols), 3, cols, seed + uint64_t(3 * 10007 + cols)));
  // Whole octets (cols % 8 == 0, every real shape): one octet, fewer octets than a workgroup's
  // lanes, and 2^k + 1 octets (one lane's step past the rest).
  if (rem)
    for (int64_t cols : {8, 64, 2056, 4104})
      for (int64_t rows : {1, 3, 33})
        out.push_back(matvec_bf16_case("remainder " + std::to_string(rows) + "x" + std::to_string(cols), rows, cols,
                                       seed + uint64_t(rows * 10007 + cols)));
  // Row counts a few past a multiple of 1024 and of 8: kernels that take several rows per
  // workgroup once rows are many (a last workgroup with 3 rows of its 4 or 8), with whole octets
  // and with odd columns.
  if (rem)
    for (int64_t rows : {1027, 4099, 8195})
      for (int64_t cols : {8, 136, 17})
        out.push_back(matvec_bf16_case("remainder " + std::to_string(rows) + "x" + std::to_string(cols), rows, cols,
                                       seed + uint64_t(rows * 10007 + cols)));
  // The only bf16 matvec of the supported models (docs/ops/quantized.md "BF16 matvec"); A17B and A3B quantize every
  // projection (matvec_q, matmul_q).
  if (real) out.push_back(matvec_bf16_case("DeepSeek-V3 router gate", 256, 7168, seed));
  return out;
}

// `--shapes perf`: the timing shapes (real_shapes.h) in bf16 with at most 2^30 weights (2 GiB;
// the A17B lm_head, 248320 x 4096, is just under); only the one labelled `only` when it is not
// empty (each case keeps its seed).
std::vector<OpCase> matvec_bf16_perf_cases(uint64_t seed, const std::string& only) {
  std::vector<OpCase> out;
  uint64_t k = 0;
  for (const PerfShape& ps : perf_matvec_shapes())
    if (ps.rows * ps.cols <= int64_t(1) << 30) {
      const std::string label =
          std::string(ps.name) + " " + std::to_string(ps.rows) + "x" + std::to_string(ps.cols) + " bf16";
      ++k;
      if (only.empty() || label == only) out.push_back(matvec_bf16_case(label, ps.rows, ps.cols, seed + k));
    }
  return out;
}

}  // namespace moe::compare
