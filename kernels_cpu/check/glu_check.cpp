// glu's three-way check: the shapes, inputs and bound of spec/glu_spec.h under cpu_f32_model()
// (both f32 tiers take glibc's expf and erff).
#include "check/checks.h"
#include "check/three_tiers.h"
#include "ops/glu.h"
#include "spec/glu_spec.h"

namespace moe {

std::vector<CheckResult> glu_check(uint64_t seed, CheckScope scope) {
  return check_shapes("glu", glu_shapes(scope_has_remainders(scope), scope_has_real(scope)), seed,
                      [](const auto& s, CheckResult& res) {
                        const GluInputs in = glu_inputs(s.p, res.seed, s.variant);
                        judge(res, "y",
                              run_tiers(res, size_t(s.p.rows * s.p.n), glu_ref<double>, glu_ref<float>, glu_fast, s.p,
                                        in.gate, in.up),
                              glu_bound(s.p, in.gate, in.up, cpu_f32_model()));
                      });
}

}  // namespace moe
