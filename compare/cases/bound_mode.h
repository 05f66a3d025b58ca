// Which error bound the comparison cases use for sums (docs/compare-thresholds.md "Worst case or
// probable"). A sum or dot product of n terms in precision u, in any order:
//   worst case      |error| <= gamma_n(u) sum|terms|, gamma_n = n u / (1 - n u)       (Higham)
//   probabilistic   |error| <= gamma~_n(lambda) sum|terms|, gamma~_n = exp(lambda sqrt(n) u + n u^2 / (1 - u)) - 1
//                   with probability >= 1 - 2 n exp(-lambda^2 (1 - u)^2 / 2)            (Higham & Mary 2019)
// when the rounding errors are independent with mean zero (round to nearest on varied data: every
// device we run; a device that rounds toward zero would break it: use the worst case there).
// lambda = 10: a false alarm per output element has probability <= 2 n e^-49.99 < 4e-22 n, below
// 1e-13 for n up to 2^28; over every element of a 1000-seed run (~1e10) below 1e-3.
// The probabilistic factor is used only where it is smaller (n > lambda^2 = 100).
#pragma once
#include <algorithm>
#include <cmath>

#include "core/check_util.h"
#include "spec/precision_model.h"

namespace moe::compare {

enum class BoundMode { Worst, Probabilistic };
inline constexpr double kLambda = 10.0;

// Process-wide: set once before cases are built (compare, its workers, mutate, bisect).
BoundMode bound_mode();
void set_bound_mode(BoundMode m);
// "probabilistic" | "worst"; throws moe::Error on another name.
BoundMode parse_bound_mode(const std::string& name);
const char* bound_mode_name(BoundMode m);

// The factor bounding a sum of n terms in precision u relative to sum|terms|, per bound_mode().
inline double sum_gamma(double n, double u = kU32) {
  const double worst = gamma_n(n, u);
  if (bound_mode() == BoundMode::Worst) return worst;
  const double probable = std::expm1(kLambda * std::sqrt(n) * u + n * u * u / (1.0 - u));
  return std::min(worst, probable);
}

// The precision model of the kernels under test (kernels_cpu/spec/precision_model.h): sums per
// bound_mode() (sum_gamma), exp and division per the process-wide budgets (decide/precision.h:
// the Vulkan rules or the device's measured errors). Read when a case is built.
PrecisionModel device_model();

// The model of the norms' cases (rmsnorm, qk_norm, rmsnorm_gated): device_model() with exp,
// division and inversesqrt budgeted by the Vulkan rules even where the device's budgets are
// measured (decide/precision.h: the one place that says which ops budget by the rules).
PrecisionModel norm_device_model();

}  // namespace moe::compare
