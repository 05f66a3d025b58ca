#include "compare/cases/bound_mode.h"

#include <atomic>
#include <cmath>
#include <string>

#include "compare/decide/precision.h"
#include "core/check.h"

namespace moe::compare {

namespace {
std::atomic<BoundMode> g_mode{BoundMode::Probabilistic};
}

BoundMode bound_mode() { return g_mode.load(); }
void set_bound_mode(BoundMode m) { g_mode.store(m); }

BoundMode parse_bound_mode(const std::string& name) {
  if (name == "probabilistic") return BoundMode::Probabilistic;
  if (name == "worst") return BoundMode::Worst;
  MOE_FAIL("--bounds '" << name << "': expected probabilistic or worst");
}

const char* bound_mode_name(BoundMode m) { return m == BoundMode::Worst ? "worst" : "probabilistic"; }

PrecisionModel device_model() {
  PrecisionModel m;
  m.sum = [](double n) { return sum_gamma(n); };
  m.exp_rel = [](double x) { return exp_rel(x); };
  m.division_rel = division_rel();
  m.rsqrt_rel = 2 * kU32 * precision().inversesqrt_ulp;  // inversesqrt, in ULP (2 by the Vulkan rules)
  m.sqrt_rel = m.rsqrt_rel + m.division_rel;  // Vulkan: sqrt inherits from 1.0 / inversesqrt()
  m.log_rel = log_ulp_rel(), m.log_abs = log_abs(), m.sincos_abs = sincos_abs();
  // Vulkan defines sin and cos only on [-pi, pi]: a kernel reduces a = k 2pi_f + r with an f32
  // 2pi (|2pi_f - 2pi| = 0.47u 2pi, times |k| <= |a| / 2pi + 1), the product's and the
  // difference's roundings and one fold: <= 1.47u |a| + 13u, budgeted 2u |a| + 16u.
  m.sincos_reduction = [](double a) { return 2 * kU32 * std::fabs(a) + 16 * kU32; };
  m.quant_weight_rounded_once = false;
  return m;
}

PrecisionModel norm_device_model() {
  const Precision rules = spec_precision();
  PrecisionModel m = device_model();
  m.exp_rel = [rules](double x) { return 2 * kU32 * (rules.exp_a + rules.exp_b * std::fabs(x)); };
  m.division_rel = 2 * kU32 * rules.division_ulp;
  m.rsqrt_rel = 2 * kU32 * rules.inversesqrt_ulp;
  m.sqrt_rel = m.rsqrt_rel + m.division_rel;  // Vulkan: sqrt inherits from 1.0 / inversesqrt()
  return m;
}

}  // namespace moe::compare
