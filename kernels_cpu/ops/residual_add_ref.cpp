#include <cstdint>

#include "core/math.h"
#include "ops/residual_add.h"

namespace moe {
void residual_add_validate(const ResidualAddParams& p, std::span<const float> a, std::span<const float> b,
                           std::span<const float> y) {
  MOE_CHECK(p.n >= 0, "residual_add: n=" << p.n << ", expected >= 0");
  check_size(a, p.n, "residual_add", "a");
  check_size(b, p.n, "residual_add", "b");
  check_size(y, p.n, "residual_add", "y");
  MOE_CHECK((spans_same(y, a) || spans_disjoint(y, a)) && (spans_same(y, b) || spans_disjoint(y, b)),
            "residual_add: y partially overlaps a or b, expected y on a, on b, or disjoint");
}

template <class Acc>
void residual_add_ref(const ResidualAddParams& p, std::span<const float> a, std::span<const float> b,
                      std::span<float> y) {
  residual_add_validate(p, a, b, y);
  for (int64_t i = 0; i < p.n; ++i) y[i] = float(Acc(a[i]) + Acc(b[i]));
}

template void residual_add_ref<float>(const ResidualAddParams&, std::span<const float>, std::span<const float>,
                                      std::span<float>);
template void residual_add_ref<double>(const ResidualAddParams&, std::span<const float>, std::span<const float>,
                                       std::span<float>);

}  // namespace moe
