#include <cstdint>

#include "core/math.h"
#include "ops/residual_add.h"

namespace moe {
namespace {

// y may sit exactly on a or on b (each element is read before it is written) and must
// otherwise be disjoint from both: a shifted overlap would read already-written sums.
bool disjoint(std::span<const float> u, std::span<const float> v) {
  const auto u0 = reinterpret_cast<uintptr_t>(u.data()), v0 = reinterpret_cast<uintptr_t>(v.data());
  return u.empty() || v.empty() || u0 + u.size_bytes() <= v0 || v0 + v.size_bytes() <= u0;
}
bool same(std::span<const float> u, std::span<const float> v) {
  return u.data() == v.data() && u.size() == v.size();
}

}  // namespace

void residual_add_validate(const ResidualAddParams& p, std::span<const float> a, std::span<const float> b,
                           std::span<const float> y) {
  MOE_CHECK(p.n >= 0, "residual_add: n=" << p.n << ", expected >= 0");
  check_size(a, p.n, "residual_add", "a");
  check_size(b, p.n, "residual_add", "b");
  check_size(y, p.n, "residual_add", "y");
  MOE_CHECK((same(y, a) || disjoint(y, a)) && (same(y, b) || disjoint(y, b)),
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
