// residual_add's three-way check: the shapes and inputs of spec/residual_add_spec.h, bound 0 (the
// spec says why).
#include "check/checks.h"
#include "check/three_tiers.h"
#include "ops/residual_add.h"
#include "spec/residual_add_spec.h"

namespace moe {

std::vector<CheckResult> residual_add_check(uint64_t seed, CheckScope scope) {
  return check_shapes("residual_add", residual_add_shapes(scope_has_remainders(scope), scope_has_real(scope)), seed,
                      [](const auto& s, CheckResult& res) {
                        const ResidualAddInputs in = residual_add_inputs(s.p, res.seed);
                        judge(res, "y",
                              run_tiers(res, size_t(s.p.n), residual_add_ref<double>, residual_add_ref<float>,
                                        residual_add_fast, s.p, in.a, in.b),
                              0.0);
                      });
}

}  // namespace moe
