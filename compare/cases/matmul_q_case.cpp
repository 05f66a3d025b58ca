#include <string>

#include "compare/cases/act_model.h"
#include "compare/cases/case_util.h"
#include "compare/cases/instances.h"
#include "compare/cases/quant_dot_case.h"
#include "compare/cases/real_shapes.h"
#include "ops/matmul_q.h"
#include "spec/matmul_q_spec.h"

namespace moe::compare {

// The expert cases' row sums (act_model.h): quant_row_sums at the GPU's magnitudes.
void quant_rows(const QuantMatrix& m, const double* v, double* exact, double* mag) {
  quant_row_sums(m, v, exact, mag, false);
}

namespace {

// matmul_q's GPU cases: the shapes, inputs and bound of spec/matmul_q_spec.h; truth
// matmul_q_ref<double>, token by token (a token's outputs depend on its own x only).
OpCase matmul_q_case(const std::string& label, uint64_t seed, const MatmulQParams& p, const QuantMatrix& W,
                     std::span<const float> x, bool exact) {
  OpCase c = quant_dot_case("matmul_q", label, seed, p, W, x, exact, [&](std::span<float> y) {
    for_blocks(p.tokens, 1, [&](int64_t t0, int64_t t1) {
      MatmulQParams pt = p;
      pt.tokens = t1 - t0;
      matmul_q_ref<double>(pt, W, x.subspan(size_t(t0 * p.cols), size_t((t1 - t0) * p.cols)),
                           y.subspan(size_t(t0 * p.rows), size_t((t1 - t0) * p.rows)));
    });
  });
  c.flops = 2.0 * double(p.tokens) * double(p.rows) * double(p.cols);
  return c;
}

// The spec's inputs for (p, seed).
OpCase seeded_case(const std::string& label, const MatmulQParams& p, uint64_t seed, bool exact = false) {
  const QuantDotInputs in = quant_dot_inputs(p, seed, exact);
  return matmul_q_case(label, seed, p, in.W.view(), in.x, exact);
}

}  // namespace

OpCase matmul_q_instance(const std::string& label, uint64_t seed, const MatmulQParams& p, const QuantMatrix& W,
                         std::span<const float> x) {
  return matmul_q_case(label, seed, p, W, x, false);
}

std::vector<OpCase> matmul_q_cases(bool rem, bool real, uint64_t seed) {
  return build_cases(matmul_q_shapes(rem, real), [&](const MatmulQShape& s) -> std::optional<OpCase> {
    if (!s.variant.gpu) return std::nullopt;
    return seeded_case(s.label, s.p, seed + s.seed_offset, s.variant.exact);
  });
}

// `--shapes perf`: 4-bit at the two large A17B projections, speculative-decode and small
// prefill token counts (T = 2..16: still bound by the weights' bytes) and prefill chunks
// (T = 64..512 on A3B's in_proj_qkv, whose f64 truth stays within seconds: bound by arithmetic,
// timed against the FMA peak). Only the one labelled `only` when it is not empty (each case keeps
// its seed).
std::vector<OpCase> matmul_q_perf_cases(uint64_t seed, const std::string& only) {
  std::vector<OpCase> out;
  uint64_t k = 0;
  const auto add = [&](const std::string& label, int64_t T, int64_t rows, int64_t cols) {
    ++k;
    if (only.empty() || label == only) out.push_back(seeded_case(label, {{rows, cols, 4, 64}, T}, seed + k));
  };
  for (const PerfShape& ps : perf_matvec_shapes()) {
    if (ps.rows > 16384) continue;  // the lm_heads: one token per step
    for (int64_t T : {2, 4, 8, 16})
      add(std::string(ps.name) + " " + std::to_string(ps.rows) + "x" + std::to_string(ps.cols) + " 4-bit T " +
              std::to_string(T),
          T, ps.rows, ps.cols);
  }
  for (int64_t T : {64, 128, 256, 512}) add("A3B in_proj_qkv 8192x2048 4-bit T " + std::to_string(T), T, 8192, 2048);
  return out;
}

}  // namespace moe::compare
