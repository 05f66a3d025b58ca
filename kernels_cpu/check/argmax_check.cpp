// argmax's three-way check: the shapes and inputs of spec/argmax_spec.h; every tier must return
// the very same index (the spec says why).
#include "check/checks.h"
#include "check/three_tiers.h"
#include "ops/argmax.h"
#include "spec/argmax_spec.h"

namespace moe {

std::vector<CheckResult> argmax_check(uint64_t seed, CheckScope scope) {
  return check_shapes("argmax", argmax_shapes(scope_has_remainders(scope), scope_has_real(scope)), seed,
                      [](const auto& s, CheckResult& res) {
                        const std::vector<float> x = argmax_inputs(s.p, res.seed, s.variant);
                        judge_exact(res, "idx",
                                    run_tiers<int32_t>(res, size_t(s.p.rows), argmax_ref<double>, argmax_ref<float>,
                                                       argmax_fast, s.p, x));
                      });
}

}  // namespace moe
