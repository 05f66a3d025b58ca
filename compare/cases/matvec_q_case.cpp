#include <string>

#include "compare/cases/case_util.h"
#include "compare/cases/quant_dot_case.h"
#include "compare/cases/real_shapes.h"
#include "ops/matvec_q.h"
#include "spec/matvec_q_spec.h"

namespace moe::compare {
namespace {

// matvec_q's GPU cases: the shapes, inputs and bound of spec/matvec_q_spec.h; truth
// matvec_q_ref<double> in blocks of rows.
OpCase matvec_q_case(const std::string& label, const MatvecQParams& p, uint64_t seed, bool exact) {
  const QuantDotInputs in = matvec_q_inputs(p, seed, exact);
  const QuantMatrix W = in.W.view();
  return quant_dot_case("matvec_q", label, seed, p, W, in.x, exact, [&](std::span<float> y) {
    for_blocks(p.rows, 256, [&](int64_t r0, int64_t r1) {
      const MatvecQParams pb{r1 - r0, p.cols, p.bits, p.group_size};
      matvec_q_ref<double>(pb, W.row_block(r0, r1 - r0), in.x, y.subspan(size_t(r0), size_t(r1 - r0)));
    });
  });
}

}  // namespace

std::vector<OpCase> matvec_q_cases(bool rem, bool real, uint64_t seed) {
  return build_cases(matvec_q_shapes(rem, real), [&](const MatvecQShape& s) -> std::optional<OpCase> {
    if (!s.variant.gpu) return std::nullopt;
    return matvec_q_case(s.label, s.p, seed + s.seed_offset, s.variant.exact);
  });
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
      if (only.empty() || label == only)
        out.push_back(matvec_q_case(label, {ps.rows, ps.cols, bits, 64}, seed + k, false));
    }
  return out;
}

}  // namespace moe::compare
