#include <cmath>
#include <limits>

#include "core/math.h"
#include "ops/argmax.h"

namespace moe {

void argmax_validate(const ArgmaxParams& p, std::span<const float> x, std::span<int32_t> idx) {
  MOE_CHECK(p.rows >= 0 && p.n > 0, "argmax: rows=" << p.rows << " n=" << p.n << ", expected rows >= 0, n > 0");
  // The index is returned as int32 (token ids).
  MOE_CHECK(p.n <= std::numeric_limits<int32_t>::max(),
            "argmax: n=" << p.n << " does not fit an int32 index (max " << std::numeric_limits<int32_t>::max() << ")");
  check_size(x, p.rows * p.n, "argmax", "x");
  check_size(idx, p.rows, "argmax", "idx");
}

template <class Acc>
void argmax_ref(const ArgmaxParams& p, std::span<const float> x, std::span<int32_t> idx) {
  argmax_validate(p, x, idx);
  for (int64_t r = 0; r < p.rows; ++r) {
    const float* xr = x.data() + r * p.n;
    int64_t best = 0;
    Acc m = Acc(xr[0]);
    // Once the best is a NaN nothing can replace it (the first NaN wins).
    for (int64_t i = 1; i < p.n && !std::isnan(m); ++i) {
      const Acc v = Acc(xr[i]);
      if (std::isnan(v) || v > m) best = i, m = v;
    }
    idx[r] = int32_t(best);
  }
}

template void argmax_ref<float>(const ArgmaxParams&, std::span<const float>, std::span<int32_t>);
template void argmax_ref<double>(const ArgmaxParams&, std::span<const float>, std::span<int32_t>);

}  // namespace moe
