// matvec_q's three-way check: the shapes, inputs and bound of spec/matvec_q_spec.h, compared on
// row windows (check/quant_dot_check.h).
#include "check/checks.h"
#include "check/quant_dot_check.h"
#include "core/params.h"
#include "ops/matvec_q.h"
#include "spec/matvec_q_spec.h"

namespace moe {

std::vector<CheckResult> matvec_q_check(uint64_t seed, CheckScope scope) {
  std::vector<CheckResult> out;
  for (const MatvecQShape& s : matvec_q_shapes(scope_has_remainders(scope), scope_has_real(scope))) {
    const auto tier = [](auto fn) -> QuantDotTier {
      return [fn](const QuantMatrix& W, std::span<const float> x, std::span<float> y) {
        fn(MatvecQParams{W.rows, W.cols, W.bits, W.group_size}, W, x, y);
      };
    };
    out.push_back(quant_dot_check("matvec_q", "y", s.label, params_to_string(s.p), seed + s.seed_offset, s.variant,
                                  matvec_q_inputs(s.p, seed + s.seed_offset, s.variant.exact),
                                  tier(matvec_q_ref<double>), tier(matvec_q_ref<float>), tier(matvec_q_fast)));
  }
  return out;
}

}  // namespace moe
