// softmax's three-way check: the shapes, inputs and bound of spec/softmax_spec.h under
// cpu_f32_model() (both f32 tiers take glibc's expf).
#include "check/checks.h"
#include "check/three_tiers.h"
#include "ops/softmax.h"
#include "spec/softmax_spec.h"

namespace moe {

std::vector<CheckResult> softmax_check(uint64_t seed, CheckScope scope) {
  return check_shapes("softmax", softmax_shapes(scope_has_remainders(scope), scope_has_real(scope)), seed,
                      [](const auto& s, CheckResult& res) {
                        const SoftmaxInputs in = softmax_inputs(s.p, res.seed, s.variant);
                        judge(res, "y",
                              run_tiers(res, size_t(s.p.rows * s.p.cols), softmax_ref<double>, softmax_ref<float>,
                                        softmax_fast, s.p, in.x, in.mask),
                              softmax_bound(s.p, in.x, in.mask, cpu_f32_model()));
                      });
}

}  // namespace moe
