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
  // tanh: the rules inherit its precision from (e^x - e^-x) / (e^x + e^-x). The exps' relative
  // errors e+, e- move that quotient by (e+ - e-) / (2 cosh^2 x) (first order), at most
  // exp_rel(|x|) sech^2 x (relative error 1 where e^|x| leaves f32's normal range, |x| > 87);
  // the subtraction, the addition and the division add (2u + division_rel) |tanh x|.
  m.tanh_abs = [](double x) {
    const double c = std::cosh(x), sech2 = std::isfinite(c) ? 1.0 / (c * c) : 0.0;
    return (std::fabs(x) > 87 ? 1.0 : exp_rel(x)) * sech2 + (2 * kU32 + division_rel()) * std::fabs(std::tanh(x));
  };
  // erf: GLSL has none; engines build it from exp, as 1 - P(t) t e^(-x^2), t = 1 / (1 + p |x|)
  // (Abramowitz & Stegun 7.1.26, ggml's form: within 1.5e-7 of erf). Budget: that approximation,
  // exp's error on the term e^(-x^2) (its argument's rounding moves it by at most x^2 u, <= 0.37u
  // of the term), 128u e^(-x^2) for the polynomial (ten roundings on terms summing to at most
  // 4.48, 45u, and t's error, u + a division, through the derivative, at most 16.2: 57u at 3.5u)
  // and the final 1 - w (2u of a value at most 1).
  m.erf_abs = [](double x) {
    const double x2 = x * x;
    return 1.5e-7 + ((x2 > 87 ? 1.0 : exp_rel(x2)) + 128 * kU32) * std::exp(-x2) + 2 * kU32;
  };
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
