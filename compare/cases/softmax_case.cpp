#include <string>

#include "compare/cases/bound_mode.h"
#include "compare/cases/case_util.h"
#include "ops/softmax.h"
#include "spec/softmax_spec.h"

namespace moe::compare {

// softmax's GPU cases: the shapes, inputs and bound of spec/softmax_spec.h under the device's
// precision model. Without a mask (mask_rows 0) the mask tensor holds one 0 (a Vulkan buffer
// cannot be empty): a kernel must not read it then.
std::vector<OpCase> softmax_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  for (const auto& s : softmax_shapes(rem, real)) {
    const SoftmaxInputs in = softmax_inputs(s.p, seed + s.seed_offset, s.variant);
    OpCase c = new_case("softmax", s.label, seed + s.seed_offset);
    set_vars(c, s.p);
    std::vector<float> y(static_cast<size_t>(s.p.rows * s.p.cols));
    softmax_ref<double>(s.p, in.x, in.mask, y);
    c.tensors["x"] = f32_tensor(in.x);
    c.tensors["mask"] = f32_tensor(s.p.mask_rows > 0 ? in.mask : std::vector<float>{0.0f});
    add_reduction_output(c, "y", y, softmax_bound(s.p, in.x, in.mask, device_model()));
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace moe::compare
