// rmsnorm_gated's three-way check: the shapes, inputs and bound of spec/rmsnorm_gated_spec.h.
#include "check/checks.h"
#include "check/three_tiers.h"
#include "ops/rmsnorm_gated.h"
#include "spec/norm_bound.h"
#include "spec/rmsnorm_gated_spec.h"

namespace moe {

std::vector<CheckResult> rmsnorm_gated_check(uint64_t seed, CheckScope scope) {
  return check_shapes(
      "rmsnorm_gated", rmsnorm_gated_shapes(scope_has_remainders(scope), scope_has_real(scope)), seed,
      [](const auto& s, CheckResult& res) {
        const RmsNormGatedInputs in = rmsnorm_gated_inputs(s.p, res.seed);
        const std::vector<float> w = widen_bf16(in.w);
        const TierOutputs<> y = run_tiers(res, in.o.size(), rmsnorm_gated_ref<double>, rmsnorm_gated_ref<float>,
                                        rmsnorm_gated_fast, s.p, in.o, in.z, w);
        judge(res, "y", y, rmsnorm_gated_bound(s.p, in.o, in.z, w, y.truth, cpu_f32_model()));
      });
}

}  // namespace moe
