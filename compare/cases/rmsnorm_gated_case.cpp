#include <string>

#include "compare/cases/case_util.h"
#include "compare/cases/instances.h"
#include "compare/cases/bound_mode.h"
#include "compare/cases/case_util.h"
#include "ops/rmsnorm_gated.h"
#include "spec/norm_bound.h"
#include "spec/rmsnorm_gated_spec.h"

namespace moe::compare {

// rmsnorm_gated's GPU cases: the shapes, inputs and bound of spec/rmsnorm_gated_spec.h, under the
// norms' precision model. The weight is bf16, as checkpoints store it.
OpCase rmsnorm_gated_instance(const std::string& label, uint64_t seed, const RmsNormGatedParams& p,
                              std::span<const float> o, std::span<const float> z, std::span<const bf16> wb) {
  OpCase c = new_case("rmsnorm_gated", label, seed);
  set_vars(c, p);
  const std::vector<float> w = widen_bf16(wb);
  std::vector<float> y(o.size());
  rmsnorm_gated_ref<double>(p, o, z, w, y);
  c.tensors["o"] = f32_tensor(o);
  c.tensors["z"] = f32_tensor(z);
  c.tensors["w"] = bf16_tensor(wb);
  add_reduction_output(c, "y", y, rmsnorm_gated_bound(p, o, z, w, y, norm_device_model()));
  return c;
}

std::vector<OpCase> rmsnorm_gated_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  for (const auto& s : rmsnorm_gated_shapes(rem, real)) {
    const RmsNormGatedInputs in = rmsnorm_gated_inputs(s.p, seed + s.seed_offset);
    out.push_back(rmsnorm_gated_instance(s.label, seed + s.seed_offset, s.p, in.o, in.z, in.w));
  }
  return out;
}

}  // namespace moe::compare
