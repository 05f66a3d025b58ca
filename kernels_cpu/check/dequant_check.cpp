// dequant's three-way check: the shapes and inputs of spec/dequant_spec.h, bound 0 (bit-exact,
// derived there).
#include "check/checks.h"
#include "check/three_tiers.h"
#include "ops/dequant.h"
#include "spec/dequant_spec.h"

namespace moe {

std::vector<CheckResult> dequant_check(uint64_t seed, CheckScope scope) {
  return check_shapes("dequant", dequant_shapes(scope_has_remainders(scope), scope_has_real(scope)), seed,
                      [](const DequantShape& s, CheckResult& res) {
                        const QuantStorage W = dequant_inputs(s.p, res.seed);
                        judge(res, "y",
                              run_tiers(res, size_t(s.p.rows * s.p.cols), dequant_ref<double>, dequant_ref<float>,
                                        dequant_fast, s.p, W.view()),
                              0.0);
                      });
}

}  // namespace moe
