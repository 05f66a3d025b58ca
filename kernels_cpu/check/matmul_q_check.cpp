// matmul_q's three-way check: the shapes, inputs and bound of spec/matmul_q_spec.h, compared on
// row windows, all tokens (check/quant_dot_check.h).
#include "check/checks.h"
#include "check/quant_dot_check.h"
#include "core/params.h"
#include "ops/matmul_q.h"
#include "spec/matmul_q_spec.h"

namespace moe {

std::vector<CheckResult> matmul_q_check(uint64_t seed, CheckScope scope) {
  std::vector<CheckResult> out;
  for (const MatmulQShape& s : matmul_q_shapes(scope_has_remainders(scope), scope_has_real(scope))) {
    const auto tier = [&](auto fn) -> QuantDotTier {
      return [fn, T = s.p.tokens](const QuantMatrix& W, std::span<const float> x, std::span<float> y) {
        fn(MatmulQParams{quant_params(W), T}, W, x, y);
      };
    };
    out.push_back(quant_dot_check("matmul_q", "Y", s.label, params_to_string(s.p), seed + s.seed_offset, s.variant,
                                  quant_dot_inputs(s.p, seed + s.seed_offset, s.variant.exact),
                                  tier(matmul_q_ref<double>), tier(matmul_q_ref<float>), tier(matmul_q_fast)));
  }
  return out;
}

}  // namespace moe
