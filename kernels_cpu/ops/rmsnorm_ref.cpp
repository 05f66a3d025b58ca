#include <cmath>

#include "core/math.h"
#include "ops/rmsnorm.h"

namespace moe {

void rmsnorm_validate(const RmsNormParams& p, std::span<const float> x, std::span<const float> w,
                      std::span<float> y) {
  MOE_CHECK(p.rows >= 0 && p.dim > 0, "rmsnorm: rows=" << p.rows << " dim=" << p.dim << ", expected rows >= 0, dim > 0");
  MOE_CHECK(p.eps >= 0.0f, "rmsnorm: eps=" << p.eps << ", expected >= 0");
  check_size(x, p.rows * p.dim, "rmsnorm", "x");
  check_size(w, p.dim, "rmsnorm", "w");
  check_size(y, p.rows * p.dim, "rmsnorm", "y");
  MOE_CHECK((spans_same(y, x) || spans_disjoint(y, x)) && spans_disjoint(y, w),
            "rmsnorm: y partially overlaps x or overlaps w, expected y on x (in place) or disjoint");
}

template <class Acc>
void rmsnorm_ref(const RmsNormParams& p, std::span<const float> x, std::span<const float> w, std::span<float> y) {
  rmsnorm_validate(p, x, w, y);
  for (int64_t r = 0; r < p.rows; ++r) {
    const float* xr = x.data() + r * p.dim;
    float* yr = y.data() + r * p.dim;
    Acc ss = 0;
    for (int64_t i = 0; i < p.dim; ++i) ss += Acc(xr[i]) * Acc(xr[i]);
    const Acc inv = Acc(1) / std::sqrt(ss / Acc(p.dim) + Acc(p.eps));
    for (int64_t i = 0; i < p.dim; ++i) {
      const Acc wi = p.add_one ? Acc(1) + Acc(w[i]) : Acc(w[i]);
      yr[i] = float((Acc(xr[i]) * inv) * wi);
    }
  }
}

template void rmsnorm_ref<float>(const RmsNormParams&, std::span<const float>, std::span<const float>, std::span<float>);
template void rmsnorm_ref<double>(const RmsNormParams&, std::span<const float>, std::span<const float>,
                                  std::span<float>);

}  // namespace moe
