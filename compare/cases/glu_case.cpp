#include <string>

#include "compare/cases/bound_mode.h"
#include "compare/cases/case_util.h"
#include "compare/cases/instances.h"
#include "ops/glu.h"
#include "spec/glu_spec.h"

namespace moe::compare {

OpCase glu_instance(const std::string& label, uint64_t seed, const GluParams& p, std::span<const float> gate,
                    std::span<const float> up) {
  OpCase c = new_case("glu", label, seed);
  set_vars(c, p);
  std::vector<float> y(static_cast<size_t>(p.rows * p.n));
  glu_ref<double>(p, gate, up, y);
  c.tensors["gate"] = f32_tensor(gate), c.tensors["up"] = f32_tensor(up);
  add_reduction_output(c, "y", y, glu_bound(p, gate, up, device_model()));
  return c;
}

// glu's GPU cases: the shapes, inputs and bound of spec/glu_spec.h under the device's precision
// model. gate and up are separate tensors; an engine holding them as the two halves of one row
// binds both into one buffer with views (docs/manifests.md "GLU one-tensor layouts").
std::vector<OpCase> glu_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  for (const auto& s : glu_shapes(rem, real)) {
    const GluInputs in = glu_inputs(s.p, seed + s.seed_offset, s.variant);
    out.push_back(glu_instance(s.label, seed + s.seed_offset, s.p, in.gate, in.up));
  }
  return out;
}

}  // namespace moe::compare
