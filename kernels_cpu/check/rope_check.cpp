// rope's three-way check: the shapes, inputs and bound of spec/rope_spec.h.
#include "check/checks.h"
#include "check/rotary_check.h"
#include "ops/rope.h"
#include "spec/rope_spec.h"

namespace moe {

std::vector<CheckResult> rope_check(uint64_t seed, CheckScope scope) {
  return rotary_check("rope", rope_shapes(scope_has_remainders(scope), scope_has_real(scope)), seed, rope_inputs,
                      rope_ref<double>, rope_ref<float>, rope_fast, rope_bound);
}

}  // namespace moe
