#include <string>

#include "compare/cases/instances.h"
#include "compare/cases/rotary_cases.h"
#include "ops/rope_yarn.h"
#include "spec/rope_yarn_spec.h"

namespace moe::compare {

// rope_yarn's GPU cases: the shapes, inputs and bound of spec/rope_yarn_spec.h, under the
// device's precision model; what the host computes once per model (the ramp's ends, the attention
// factor) goes to the kernel as push constants.
OpCase rope_yarn_instance(const std::string& label, uint64_t seed, const RopeYarnParams& p,
                          std::span<const int64_t> positions, std::span<const float> x) {
  OpCase c = new_case("rope_yarn", label, seed);
  set_vars(c, p);
  const YarnRange rg = rope_yarn_range(p);
  c.vars["ramp_low"] = rg.low, c.vars["ramp_high"] = rg.high;
  c.vars["attention_factor"] = rope_yarn_attention_factor<double>(p);
  set_rotary_case(c, p, positions, x, rope_yarn_ref<double>, rope_yarn_bound);
  return c;
}

std::vector<OpCase> rope_yarn_cases(bool rem, bool real, uint64_t seed) {
  return rotary_cases(rope_yarn_shapes(rem, real), seed, rope_yarn_inputs, rope_yarn_instance);
}

}  // namespace moe::compare
