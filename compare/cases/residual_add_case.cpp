#include <string>

#include "compare/cases/case_util.h"
#include "compare/cases/instances.h"
#include "ops/residual_add.h"
#include "spec/residual_add_spec.h"

namespace moe::compare {

// residual_add's GPU cases: the shapes and inputs of spec/residual_add_spec.h, bit-exact (the spec
// says why).
OpCase residual_add_instance(const std::string& label, uint64_t seed, const ResidualAddParams& p,
                             std::span<const float> a, std::span<const float> b) {
  OpCase c = new_case("residual_add", label, seed);
  set_vars(c, p);
  std::vector<float> y(static_cast<size_t>(p.n));
  residual_add_ref<double>(p, a, b, y);
  c.tensors["a"] = f32_tensor(a), c.tensors["b"] = f32_tensor(b), c.tensors["y"] = output_f32(p.n);
  set_exact_output(c, "y", y);
  return c;
}

std::vector<OpCase> residual_add_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  for (const auto& s : residual_add_shapes(rem, real)) {
    const ResidualAddInputs in = residual_add_inputs(s.p, seed + s.seed_offset);
    out.push_back(residual_add_instance(s.label, seed + s.seed_offset, s.p, in.a, in.b));
  }
  return out;
}

}  // namespace moe::compare
