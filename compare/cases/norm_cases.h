// What the norms' GPU cases share (compare/cases/{rmsnorm,rmsnorm_gated,qk_norm}_case.cpp): their
// precision model and their outputs, decided per element within the spec's bound.
#pragma once
#include <cmath>
#include <string>
#include <vector>

#include "compare/cases/bound_mode.h"
#include "compare/cases/case_util.h"
#include "compare/decide/precision.h"

namespace moe::compare {

// device_model() with division, inversesqrt and exp budgeted by the Vulkan precision rules even
// where the device's budgets are measured (compare/decide/precision.h: the norms budget by the rules).
inline PrecisionModel norm_device_model() {
  const Precision rules = spec_precision();
  PrecisionModel m = device_model();
  m.exp_rel = [rules](double x) { return 2 * kU32 * (rules.exp_a + rules.exp_b * std::fabs(x)); };
  m.division_rel = 2 * kU32 * rules.division_ulp;
  m.rsqrt_rel = 2 * kU32 * rules.inversesqrt_ulp;
  return m;
}

// Output `name` (an f32 tensor of truth's size), decided per element against truth within bound.
inline void set_norm_output(OpCase& c, const std::string& name, const std::vector<float>& truth,
                            std::vector<double> bound) {
  c.tensors[name] = output_f32(int64_t(truth.size()));
  set_reduction_output(c, name, widen(truth), std::move(bound));
}

}  // namespace moe::compare
