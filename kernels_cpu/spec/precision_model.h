// What an op's error bound needs to know about the implementation it judges: how its sums round
// and how accurate its exp and division are. One bound formula per op (kernels_cpu/spec/) serves
// every judge through this model:
//   the CPU three-way check    cpu_f32_model(): worst-case sums (gamma_n), glibc's f32 libm
//                              (expf within 1 ULP, correctly rounded division);
//   the GPU cases              compare's device model (compare/cases/bound_mode.h, device_model):
//                              --bounds worst or probabilistic sums, and the Vulkan precision
//                              rules or the device's measured budgets for exp and division.
// One ULP of a value is at most 2u of it, so an error of N ULP is at most 2Nu relative.
#pragma once
#include <cmath>
#include <functional>

#include "core/check_util.h"

namespace moe {

struct PrecisionModel {
  double u = kU32;  // unit roundoff of the arithmetic (f32, round to nearest)
  // Bound of an n-term sum or dot product in any order, relative to sum |terms|.
  std::function<double(double n)> sum = [](double n) { return gamma_n(n); };
  // Relative error of exp(x) at argument x.
  std::function<double(double x)> exp_rel = [](double) { return 2 * kU32; };
  double division_rel = kU32;  // relative error of a division
  // Relative error of 1/sqrt(x): on the CPU sqrt, then the division, each correctly rounded (2u).
  double rsqrt_rel = 2 * kU32;
  // Relative error of sqrt(x): correctly rounded on the CPU (u).
  double sqrt_rel = kU32;
  // log and log2: relative error, and absolute error for arguments in [0.5, 2] (where the value
  // nears 0). glibc's f32 ones are within 1 ULP: 2u relative, and 2u absolute for a value in [-1, 1].
  double log_rel = 2 * kU32;
  double log_abs = 2 * kU32;
  // sin and cos: absolute error for arguments in [-pi, pi] (glibc's f32 ones within 1 ULP of a
  // value at most 1: 2u), and the absolute error of first bringing an angle a into [-pi, pi]
  // (glibc reduces exactly: 0).
  double sincos_abs = 2 * kU32;
  std::function<double(double a)> sincos_reduction = [](double) { return 0.0; };
  // tanh(x) and erf(x): absolute error (both lie in [-1, 1]). glibc's f32 tanhf and erff are
  // budgeted 2 ULP: 4u of the value.
  std::function<double(double x)> tanh_abs = [](double x) { return 4 * kU32 * std::fabs(std::tanh(x)); };
  std::function<double(double x)> erf_abs = [](double x) { return 4 * kU32 * std::fabs(std::erf(x)); };
  // A quantized weight's term in a dot product: true where the implementation rounds the weight
  // w = fma(q, s, b) once and multiplies by x (the CPU tiers), so its roundings scale with |w x|;
  // false where it may form fma(q, s x, b x) instead, rounding s x and b x apart (GPU kernels,
  // docs/ops/verification.md "Matvec rounding, CPU versus GPU"): they scale with |q s x| + |b x|.
  bool quant_weight_rounded_once = true;
};

// The CPU tiers: f32 arithmetic, worst-case sums, glibc's f32 exp (within 1 ULP: 2u relative) and
// IEEE division (correctly rounded: u).
inline PrecisionModel cpu_f32_model() { return PrecisionModel{}; }

// The CPU tiers where the fast tier takes exp or log from Eigen's vectorised functions: those
// budgeted 2 ULP (4u relative; 4u absolute for a log in [-1, 1]), the rest as cpu_f32_model().
inline PrecisionModel cpu_eigen_model() {
  PrecisionModel m;
  m.exp_rel = [](double) { return 4 * kU32; };
  m.log_rel = m.log_abs = 4 * kU32;
  return m;
}

}  // namespace moe
