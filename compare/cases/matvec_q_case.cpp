#include <string>

#include "compare/cases/bound_mode.h"
#include "compare/cases/case_util.h"
#include "compare/cases/real_shapes.h"
#include "ops/matvec_q.h"
#include "spec/matvec_q_spec.h"

namespace moe::compare {
namespace {

// matvec_q's GPU cases: the shapes, inputs and bound of spec/matvec_q_spec.h under the device's
// precision model; truth matvec_q_ref<double>.
OpCase matvec_q_case(const std::string& label, const MatvecQParams& p, uint64_t seed, bool exact) {
  const QuantDotInputs in = matvec_q_inputs(p, seed, exact);
  const QuantMatrix W = in.W.view();
  OpCase c = new_case("matvec_q", label, seed);
  set_vars(c, p);
  std::vector<float> y(static_cast<size_t>(p.rows));
  for_blocks(p.rows, 256, [&](int64_t r0, int64_t r1) {
    const MatvecQParams pb{r1 - r0, p.cols, p.bits, p.group_size};
    matvec_q_ref<double>(pb, W.row_block(r0, r1 - r0), in.x, std::span<float>(y).subspan(size_t(r0), size_t(r1 - r0)));
  });
  add_quant_tensors(c, "W", in.W);
  c.tensors["x"] = f32_tensor(in.x);
  c.tensors["y"] = output_f32(p.rows);
  OutputSpec s;
  s.name = "y", s.kind = Kind::Reduction;
  s.bound = exact ? std::vector<double>(y.size(), 0.0) : quant_dot_bound(W, in.x, y, device_model());
  c.outputs["y"] = s;
  c.truth["y"] = widen(y);
  return c;
}

}  // namespace

std::vector<OpCase> matvec_q_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  for (const MatvecQShape& s : matvec_q_shapes(rem, real))
    if (s.variant.gpu) out.push_back(matvec_q_case(s.label, s.p, seed + s.seed_offset, s.variant.exact));
  return out;
}

// `--shapes perf`: every timing shape (real_shapes.h) at each bit width; only the one labelled
// `only` when it is not empty (each case keeps its seed).
std::vector<OpCase> matvec_q_perf_cases(uint64_t seed, const std::string& only) {
  std::vector<OpCase> out;
  uint64_t k = 0;
  for (int bits : {4, 8, 2})
    for (const PerfShape& ps : perf_matvec_shapes()) {
      const std::string label = std::string(ps.name) + " " + std::to_string(ps.rows) + "x" + std::to_string(ps.cols) +
                                " " + std::to_string(bits) + "-bit";
      ++k;
      if (only.empty() || label == only) out.push_back(matvec_q_case(label, {ps.rows, ps.cols, bits, 64}, seed + k, false));
    }
  return out;
}

}  // namespace moe::compare
