#include <cmath>

#include "ops/argmax.h"

namespace moe {

// Two passes per row instead of one dependent scan. Pass 1 keeps 16 independent running
// maxima and NaN flags (lane l sees i = l mod 16), a loop the compiler turns into vector
// max/compare; the max of values without NaN is exact. Pass 2 finds the first position equal
// to that maximum (== treats -0.0 and +0.0 as equal, as the strict-`>` scan does), or the first
// NaN if the row has one. Rows are spread over threads when there is enough work.
void argmax_fast(const ArgmaxParams& p, std::span<const float> x, std::span<int32_t> idx) {
  argmax_validate(p, x, idx);
  constexpr int64_t kLanes = 16;
#pragma omp parallel for schedule(static) if (p.rows * p.n >= (1 << 18))
  for (int64_t r = 0; r < p.rows; ++r) {
    const float* xr = x.data() + r * p.n;
    float lane_max[kLanes];
    int lane_nan[kLanes];
    for (int64_t l = 0; l < kLanes; ++l) lane_max[l] = xr[0], lane_nan[l] = 0;
    int64_t i = 0;
    for (; i + kLanes <= p.n; i += kLanes) {
      for (int64_t l = 0; l < kLanes; ++l) {
        const float v = xr[i + l];
        lane_max[l] = v > lane_max[l] ? v : lane_max[l];
        lane_nan[l] |= (v != v);
      }
    }
    for (; i < p.n; ++i) {
      lane_max[0] = xr[i] > lane_max[0] ? xr[i] : lane_max[0];
      lane_nan[0] |= (xr[i] != xr[i]);
    }
    float m = lane_max[0];
    int any_nan = lane_nan[0];
    for (int64_t l = 1; l < kLanes; ++l) m = lane_max[l] > m ? lane_max[l] : m, any_nan |= lane_nan[l];
    int64_t best = 0;
    if (any_nan) {
      while (!std::isnan(xr[best])) ++best;
    } else {
      while (!(xr[best] == m)) ++best;
    }
    idx[r] = int32_t(best);
  }
}

}  // namespace moe
