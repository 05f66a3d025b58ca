// How accurate a device's transcendental functions are, for the cases' error bounds: the Vulkan
// precision rules (spirvenv.adoc, "Precision of GLSL.std.450 Instructions") or what the device
// was measured to do (compare/run/calibrate.h). The rules are far looser than any real driver
// for some functions — sin and cos may be off by 2^-11 absolute, exp by 3 + 2|x| ULP — and a
// bound built on them lets a kernel be wrong by that much and pass.
//
// A measured budget is the largest error seen on a dense sweep of the function's range, times
// kCalibrationSafety, never below one ULP (or 2^-24 absolute) and never above the rule, unless the
// device breaks the rule itself (then kOutOfRuleMargin times what it does).
#pragma once
#include <cmath>
#include <string>

#include "core/check_util.h"

namespace moe::compare {

struct Precision {
  double exp_a = 3, exp_b = 2;         // exp, exp2: a + b|x| ULP
  double log_abs = 0x1.0p-21;          // log, log2 in [0.5, 2]: absolute error
  double log_ulp = 3;                  // log, log2 outside [0.5, 2]: ULP
  double sincos_abs = 0x1.0p-11;       // sin, cos on [-pi, pi]: absolute error
  double inversesqrt_ulp = 2;
  double division_ulp = 2.5;
  std::string source = "Vulkan precision rules";
};

// The budget over the largest error seen: 2^20 points per function see the worst case of a
// smooth approximation to within a few percent, and 2x leaves room for what they missed.
inline constexpr double kCalibrationSafety = 2.0;
// Where the device breaks the rule, the budget is what it does times this (the rule no longer
// caps it, so the margin is kept small: a budget grows no further than the device needs).
inline constexpr double kOutOfRuleMargin = 1.25;

// Process-wide, like the bound mode: set once at start, before cases are built. The norms
// (rmsnorm, qk_norm, rmsnorm_gated) still budget exp, inversesqrt and division by the rules,
// which are at least as loose (norm_device_model(), compare/cases/bound_mode.h); inversesqrt is
// measured for the record.
const Precision& precision();
void set_precision(const Precision& p);
Precision spec_precision();

// First-order relative errors (one ULP of a value is at most 2u of it), for the bounds:
// exp(x) or exp2(x) at argument x.
inline double exp_rel(double x) { return 2 * kU32 * (precision().exp_a + precision().exp_b * std::fabs(x)); }
inline double log_ulp_rel() { return 2 * kU32 * precision().log_ulp; }
inline double log_abs() { return precision().log_abs; }
inline double sincos_abs() { return precision().sincos_abs; }
inline double division_rel() { return 2 * kU32 * precision().division_ulp; }

}  // namespace moe::compare
