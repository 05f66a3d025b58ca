// rmsnorm's three-way check: the shapes, inputs and bound of spec/rmsnorm_spec.h.
#include "check/checks.h"
#include "check/three_tiers.h"
#include "ops/rmsnorm.h"
#include "spec/norm_bound.h"
#include "spec/rmsnorm_spec.h"

namespace moe {

std::vector<CheckResult> rmsnorm_check(uint64_t seed, CheckScope scope) {
  return check_shapes("rmsnorm", rmsnorm_shapes(scope_has_remainders(scope), scope_has_real(scope)), seed,
                      [](const auto& s, CheckResult& res) {
                        const RmsNormInputs in = rmsnorm_inputs(s.p, res.seed, s.variant);
                        const TierOutputs<> y = run_tiers(res, in.x.size(), rmsnorm_ref<double>, rmsnorm_ref<float>,
                                                        rmsnorm_fast, s.p, in.x, widen_bf16(in.w));
                        judge(res, "y", y, rmsnorm_bound(s.p, y.truth, cpu_f32_model()));
                      });
}

}  // namespace moe
