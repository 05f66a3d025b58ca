// What the attention specs (attention_spec.cpp, mla_attention_spec.cpp) share: their keys' input
// distribution and the error of a softmax-weighted sum: from one query row's exact scores and a
// bound on its computed exponents' error, the relative error of every computed softmax weight and
// the rounding of sums weighted by them, under a PrecisionModel (spec/precision_model.h). First
// order in u.
// softmax_spec.cpp reads the softmax bound alone (exponent_error, softmax_row_bound).
#pragma once
#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/rng.h"
#include "spec/precision_model.h"

namespace moe {

// `rows` cache rows of keys N(0, 1) around a per-channel mean shared by every position (as real
// keys share a direction), the row width mean's size.
inline std::vector<float> keys_around_mean(Rng r, int64_t rows, const std::vector<float>& mean) {
  const int64_t w = int64_t(mean.size());
  std::vector<float> x = r.normal_vec(rows * w, 1.0);
  for (int64_t i = 0; i < rows * w; ++i) x[size_t(i)] += mean[size_t(i % w)];
  return x;
}

// Error of the exponents s_p - m of a row whose computed scores are each within Ds of exact,
// |s_p| <= A: the scale 1/sqrt(n) rounded to f32 where the params leave it 0 (a square root and
// a division, relative; exact in the truth); the subtraction s - m (m any computed score or max)
// rounds by m.u |s - m| <= 2 m.u (A + Ds); an online softmax in chunks subtracts twice (s - m_c,
// then m_c - M in the chunk factor's exp). The softmax does not depend on the common shift m, so
// each exponent is within the result of its exact s_p - max s.
inline double exponent_error(double Ds, double A, bool rounded_scale, bool chunked, const PrecisionModel& m) {
  return Ds + (rounded_scale ? (m.u + m.division_rel) * A : 0.0) + (chunked ? 4 : 2) * m.u * (A + Ds);
}

// One row's computed weights are P^_p = P_p (1 + eta_p), |eta_p| <= eta[p]:
//  * exponents each within Dx: the exact softmax of them is within a factor exp(+-2 Dx) of P (the
//    numerator moves by e^d_p, the normaliser by a weighted mean of e^d_i);
//  * exp at |x^_p| <= max s - s_p + 2 Dx: eps_p = m.exp_rel(that); in chunks of `chunk` rows the
//    chunk factor exp(m_c - M), |m_c - M| <= |x^_p|, errs as much again: (1 + eps)^2 - 1;
//  * the normaliser, len positive terms in any order (in chunks also the nc chunk-factor products
//    and the sum over chunks): within gam = m.sum(len + nc) of sum_p e^_p, which is within
//    exp(2 Dx) (1 +- ebar) of the exact sum, ebar = exp(2 Dx) sum_p P_p eps_p; then 1 / l and the
//    product with it: rho = exp(2 Dx) (1 + division_rel) (1 + u) / ((1 - ebar) (1 - gam)) - 1
//    bounds both sides (each lower factor is >= 1 - its upper excess); eta_p = rho + (1 + rho) eps_p.
// gam also bounds every sum over the row's computed weights (same count, any order).
struct SoftmaxRowBound {
  Eigen::VectorXd P, eta;  // exact weights, their relative error bounds
  double gam = 0;
};
inline SoftmaxRowBound softmax_row_bound(const Eigen::VectorXd& s, double Dx, int64_t chunk, const PrecisionModel& m) {
  const int64_t len = s.size(), nc = chunk > 0 ? (len + chunk - 1) / chunk : 0;
  const double smax = s.maxCoeff(), grow = std::exp(2 * Dx);
  SoftmaxRowBound b;
  b.P = (s.array() - smax).exp().matrix();
  b.P /= b.P.sum();
  b.eta.resize(len);
  for (int64_t p = 0; p < len; ++p) {
    const double r = m.exp_rel(smax - s(p) + 2 * Dx);
    b.eta(p) = chunk > 0 ? (1 + r) * (1 + r) - 1 : r;
  }
  const double ebar = grow * b.P.dot(b.eta);
  b.gam = m.sum(double(len + nc));
  const double rho = grow * (1 + m.division_rel) * (1 + m.u) / ((1 - ebar) * (1 - b.gam)) - 1;
  b.eta = (rho + (1 + rho) * b.eta.array()).matrix();
  return b;
}

// |computed - exact| of sum_p P^_p x_p per column of X from Xabs = |X| [len, n]: the weights'
// errors sum_p P_p eta_p |x_p|, and the sum's rounding gam sum_p |P^_p x_p| <= gam (W + those),
// W = sum_p P_p |x_p|.
template <class Mat>
Eigen::VectorXd weighted_sum_error(const SoftmaxRowBound& b, const Mat& Xabs) {
  const Eigen::VectorXd We = Xabs.transpose() * b.P.cwiseProduct(b.eta);
  return (1 + b.gam) * We + b.gam * (Xabs.transpose() * b.P);
}

}  // namespace moe
