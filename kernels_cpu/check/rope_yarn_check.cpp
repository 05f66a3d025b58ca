// rope_yarn's three-way check: the shapes, inputs and bound of spec/rope_yarn_spec.h.
#include "check/checks.h"
#include "check/rotary_check.h"
#include "ops/rope_yarn.h"
#include "spec/rope_yarn_spec.h"

namespace moe {

std::vector<CheckResult> rope_yarn_check(uint64_t seed, CheckScope scope) {
  return rotary_check("rope_yarn", rope_yarn_shapes(scope_has_remainders(scope), scope_has_real(scope)), seed,
                      rope_yarn_inputs, rope_yarn_ref<double>, rope_yarn_ref<float>, rope_yarn_fast, rope_yarn_bound);
}

}  // namespace moe
