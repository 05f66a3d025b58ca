#include <Eigen/Core>
#include <cmath>

#include "ops/rmsnorm.h"

namespace moe {

// Eigen's vectorised reductions per row, rows spread over threads when there is enough work.
void rmsnorm_fast(const RmsNormParams& p, std::span<const float> x, std::span<const float> w, std::span<float> y) {
  rmsnorm_validate(p, x, w, y);
  using Vec = Eigen::Map<const Eigen::ArrayXf>;
  Eigen::ArrayXf wv = Vec(w.data(), p.dim);
  if (p.add_one) wv += 1.0f;
#pragma omp parallel for schedule(static) if (p.rows * p.dim >= (1 << 16))
  for (int64_t r = 0; r < p.rows; ++r) {
    Vec xr(x.data() + r * p.dim, p.dim);
    const float ss = xr.square().sum();
    const float inv = 1.0f / std::sqrt(ss / float(p.dim) + p.eps);
    Eigen::Map<Eigen::ArrayXf>(y.data() + r * p.dim, p.dim) = (xr * inv) * wv;
  }
}

}  // namespace moe
