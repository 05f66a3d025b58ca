// matvec_bf16's three-way check: the shapes, inputs and bound of spec/matvec_bf16_spec.h.
#include "check/checks.h"
#include "check/three_tiers.h"
#include "ops/matvec_bf16.h"
#include "spec/matvec_bf16_spec.h"

namespace moe {

std::vector<CheckResult> matvec_bf16_check(uint64_t seed, CheckScope scope) {
  return check_shapes("matvec_bf16", matvec_bf16_shapes(scope_has_remainders(scope), scope_has_real(scope)), seed,
                      [](const MatvecBf16Shape& s, CheckResult& res) {
                        const MatvecBf16Inputs in = matvec_bf16_inputs(s.p, res.seed);
                        const TierOutputs<> y = run_tiers(res, size_t(s.p.rows), matvec_bf16_ref<double>,
                                                        matvec_bf16_ref<float>, matvec_bf16_fast, s.p, in.W, in.x);
                        judge(res, "y", y, matvec_bf16_bound(s.p, in.W, in.x, y.truth, cpu_f32_model()));
                      });
}

}  // namespace moe
