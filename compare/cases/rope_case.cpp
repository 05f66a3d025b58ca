#include <string>

#include "compare/cases/instances.h"
#include "compare/cases/rotary_cases.h"
#include "ops/rope.h"
#include "spec/rope_spec.h"

namespace moe::compare {

// rope's GPU cases: the shapes, inputs and bound of spec/rope_spec.h, under the device's precision
// model. Positions go to the kernels as a u32 buffer (the op's positions in [0, 2^31) fit).
OpCase rope_instance(const std::string& label, uint64_t seed, const RopeParams& p, std::span<const int64_t> positions,
                     std::span<const float> x) {
  OpCase c = new_case("rope", label, seed);
  set_vars(c, p);
  set_rotary_case(c, p, positions, x, rope_ref<double>, rope_bound);
  return c;
}

std::vector<OpCase> rope_cases(bool rem, bool real, uint64_t seed) {
  return rotary_cases(rope_shapes(rem, real), seed, rope_inputs, rope_instance);
}

}  // namespace moe::compare
