#include <string>

#include "compare/cases/bound_mode.h"
#include "compare/cases/case_util.h"
#include "compare/cases/instances.h"
#include "ops/moe_combine.h"
#include "spec/moe_combine_spec.h"

namespace moe::compare {

// moe_combine's GPU cases: the shapes, inputs and bound of spec/moe_combine_spec.h, under the
// device's precision model. e holds a token's K expert rows in one buffer [K, dim]; gamma is bound
// ungated too (a kernel must not need it then).
OpCase moe_combine_instance(const std::string& label, uint64_t seed, const MoeCombineParams& p,
                            std::span<const float> h, std::span<const float> e, std::span<const float> w,
                            std::span<const float> sh, std::span<const float> gamma) {
  OpCase c = new_case("moe_combine", label, seed);
  set_vars(c, p);
  std::vector<float> out(static_cast<size_t>(p.tokens * p.dim));
  moe_combine_ref<double>(p, h, e, w, sh, gamma, out);
  c.tensors["h_mid"] = f32_tensor(h);
  c.tensors["e"] = f32_tensor(e);
  c.tensors["w"] = f32_tensor(w);
  c.tensors["sh"] = f32_tensor(sh);
  c.tensors["gamma"] = f32_tensor(gamma);
  c.tensors["out"] = output_f32(p.tokens * p.dim);
  set_reduction_output(c, "out", widen(out), moe_combine_bound(p, h, e, w, sh, gamma, out, device_model()));
  return c;
}

std::vector<OpCase> moe_combine_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  for (const auto& s : moe_combine_shapes(rem, real)) {
    const MoeCombineInputs in = moe_combine_inputs(s.p, seed + s.seed_offset);
    out.push_back(moe_combine_instance(s.label, seed + s.seed_offset, s.p, in.h, in.e, in.w, in.sh, in.gamma));
  }
  return out;
}

}  // namespace moe::compare
