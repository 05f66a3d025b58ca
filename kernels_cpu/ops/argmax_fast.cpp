#include <Eigen/Core>
#include <cmath>

#include "ops/argmax.h"

namespace moe {

// Two vectorised passes per row instead of one dependent scan: Eigen's hasNaN and maxCoeff
// (exact: a max of values with no NaN is one of the values), then the first position equal
// to that maximum (== treats -0.0 and +0.0 as equal, as the strict-`>` scan does). A row
// with a NaN returns its first NaN. Rows are spread over threads when there is enough work.
void argmax_fast(const ArgmaxParams& p, std::span<const float> x, std::span<int32_t> idx) {
  argmax_validate(p, x, idx);
#pragma omp parallel for schedule(static) if (p.rows * p.n >= (1 << 18))
  for (int64_t r = 0; r < p.rows; ++r) {
    const float* xr = x.data() + r * p.n;
    Eigen::Map<const Eigen::ArrayXf> row(xr, p.n);
    int64_t best = 0;
    if (row.hasNaN()) {
      while (!std::isnan(xr[best])) ++best;
    } else {
      const float m = row.maxCoeff();
      while (!(xr[best] == m)) ++best;
    }
    idx[r] = int32_t(best);
  }
}

}  // namespace moe
