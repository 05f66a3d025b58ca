#include <string>

#include "compare/cases/case_util.h"
#include "compare/cases/instances.h"
#include "compare/cases/bound_mode.h"
#include "compare/cases/case_util.h"
#include "ops/rmsnorm.h"
#include "spec/norm_bound.h"
#include "spec/rmsnorm_spec.h"

namespace moe::compare {

// rmsnorm's GPU cases: the shapes, inputs and bound of spec/rmsnorm_spec.h, under the norms'
// precision model. The weights are bf16, as checkpoints store them.
OpCase rmsnorm_instance(const std::string& label, uint64_t seed, const RmsNormParams& p, std::span<const float> x,
                        std::span<const bf16> wb) {
  OpCase c = new_case("rmsnorm", label, seed);
  set_vars(c, p);
  std::vector<float> y(x.size());
  rmsnorm_ref<double>(p, x, widen_bf16(wb), y);
  c.tensors["x"] = f32_tensor(x);
  c.tensors["w"] = bf16_tensor(wb);
  add_reduction_output(c, "y", y, rmsnorm_bound(p, y, norm_device_model()));
  return c;
}

std::vector<OpCase> rmsnorm_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  for (const auto& s : rmsnorm_shapes(rem, real)) {
    const RmsNormInputs in = rmsnorm_inputs(s.p, seed + s.seed_offset, s.variant);
    out.push_back(rmsnorm_instance(s.label, seed + s.seed_offset, s.p, in.x, in.w));
  }
  return out;
}

}  // namespace moe::compare
