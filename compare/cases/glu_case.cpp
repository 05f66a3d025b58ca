#include <string>

#include "compare/cases/bound_mode.h"
#include "compare/cases/case_util.h"
#include "ops/glu.h"
#include "spec/glu_spec.h"

namespace moe::compare {

// glu's GPU cases: the shapes, inputs and bound of spec/glu_spec.h under the device's precision
// model. gate and up are separate tensors; an engine holding them as the two halves of one row
// binds both into one buffer with views (docs/manifests.md "GLU one-tensor layouts").
std::vector<OpCase> glu_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  for (const auto& s : glu_shapes(rem, real)) {
    const GluInputs in = glu_inputs(s.p, seed + s.seed_offset, s.variant);
    OpCase c = new_case("glu", s.label, seed + s.seed_offset);
    set_vars(c, s.p);
    std::vector<float> y(static_cast<size_t>(s.p.rows * s.p.n));
    glu_ref<double>(s.p, in.gate, in.up, y);
    c.tensors["gate"] = f32_tensor(in.gate), c.tensors["up"] = f32_tensor(in.up);
    add_reduction_output(c, "y", y, glu_bound(s.p, in.gate, in.up, device_model()));
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace moe::compare
