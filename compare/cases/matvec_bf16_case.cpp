#include <string>

#include "compare/cases/bound_mode.h"
#include "compare/cases/case_util.h"
#include "compare/cases/instances.h"
#include "compare/cases/real_shapes.h"
#include "ops/matvec_bf16.h"
#include "spec/matvec_bf16_spec.h"

namespace moe::compare {

// matvec_bf16's GPU cases: the shapes, inputs and bound of spec/matvec_bf16_spec.h under the
// device's precision model; truth matvec_bf16_ref<double>.
OpCase matvec_bf16_instance(const std::string& label, uint64_t seed, const MatvecBf16Params& p, std::span<const bf16> W,
                            std::span<const float> x) {
  const int64_t rows = p.rows, cols = p.cols;
  OpCase c = new_case("matvec_bf16", label, seed);
  set_vars(c, p);
  std::vector<float> y(static_cast<size_t>(rows));
  for_blocks(rows, 256, [&](int64_t r0, int64_t r1) {
    matvec_bf16_ref<double>({r1 - r0, cols}, W.subspan(size_t(r0 * cols), size_t((r1 - r0) * cols)), x,
                            std::span<float>(y).subspan(size_t(r0), size_t(r1 - r0)));
  });
  c.tensors["W"] = bf16_tensor(W);
  c.tensors["x"] = f32_tensor(x);
  c.tensors["y"] = output_f32(rows);
  set_reduction_output(c, "y", widen(y), matvec_bf16_bound(p, W, x, y, device_model()));
  return c;
}

namespace {

OpCase matvec_bf16_case(const std::string& label, const MatvecBf16Params& p, uint64_t seed) {
  const MatvecBf16Inputs in = matvec_bf16_inputs(p, seed);
  return matvec_bf16_instance(label, seed, p, in.W, in.x);
}

}  // namespace

std::vector<OpCase> matvec_bf16_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  for (const MatvecBf16Shape& s : matvec_bf16_shapes(rem, real))
    if (s.variant.gpu) out.push_back(matvec_bf16_case(s.label, s.p, seed + s.seed_offset));
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
      if (only.empty() || label == only) out.push_back(matvec_bf16_case(label, {ps.rows, ps.cols}, seed + k));
    }
  return out;
}

}  // namespace moe::compare
