// moe_combine's three-way check: the shapes, inputs and bound of spec/moe_combine_spec.h.
#include "check/checks.h"
#include "check/three_tiers.h"
#include "ops/moe_combine.h"
#include "spec/moe_combine_spec.h"

namespace moe {

std::vector<CheckResult> moe_combine_check(uint64_t seed, CheckScope scope) {
  return check_shapes("moe_combine", moe_combine_shapes(scope_has_remainders(scope), scope_has_real(scope)), seed,
                      [](const auto& s, CheckResult& res) {
                        const MoeCombineInputs in = moe_combine_inputs(s.p, res.seed);
                        const TierOutputs<> y =
                            run_tiers(res, size_t(s.p.tokens * s.p.dim), moe_combine_ref<double>, moe_combine_ref<float>,
                                      moe_combine_fast, s.p, in.h, in.e, in.w, in.sh, in.gamma);
                        judge(res, "out", y,
                              moe_combine_bound(s.p, in.h, in.e, in.w, in.sh, in.gamma, y.truth, cpu_f32_model()));
                      });
}

}  // namespace moe
