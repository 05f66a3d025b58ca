#include <cmath>
#include <cstdint>

#include "core/math.h"
#include "ops/rmsnorm_gated.h"

namespace moe {
void rmsnorm_gated_validate(const RmsNormGatedParams& p, std::span<const float> o, std::span<const float> z,
                            std::span<const float> w, std::span<const float> y) {
  const int64_t n = head_norm_elements("rmsnorm_gated", p.tokens, p.heads, p.head_dim, p.eps);
  check_size(o, n, "rmsnorm_gated", "o");
  check_size(z, n, "rmsnorm_gated", "z");
  check_size(w, p.head_dim, "rmsnorm_gated", "w");
  check_size(y, n, "rmsnorm_gated", "y");
  MOE_CHECK((spans_same(y, o) || spans_disjoint(y, o)) && (spans_same(y, z) || spans_disjoint(y, z)) && spans_disjoint(y, w),
            "rmsnorm_gated: y partially overlaps o, z or w, expected y on o, on z, or disjoint");
}

template <class Acc>
void rmsnorm_gated_ref(const RmsNormGatedParams& p, std::span<const float> o, std::span<const float> z,
                       std::span<const float> w, std::span<float> y) {
  rmsnorm_gated_validate(p, o, z, w, y);
  const int64_t dv = p.head_dim;
  for (int64_t r = 0; r < p.tokens * p.heads; ++r) {
    const float* orow = o.data() + r * dv;
    const float* zrow = z.data() + r * dv;
    float* yrow = y.data() + r * dv;
    Acc ss = 0;
    for (int64_t i = 0; i < dv; ++i) ss += Acc(orow[i]) * Acc(orow[i]);
    const Acc inv = Acc(1) / std::sqrt(ss / Acc(dv) + Acc(p.eps));
    for (int64_t i = 0; i < dv; ++i) {
      const Acc gate = silu(Acc(zrow[i]));  // z / (1 + exp(-z))
      yrow[i] = float(((Acc(orow[i]) * inv) * Acc(w[i])) * gate);
    }
  }
}

template void rmsnorm_gated_ref<float>(const RmsNormGatedParams&, std::span<const float>, std::span<const float>,
                                       std::span<const float>, std::span<float>);
template void rmsnorm_gated_ref<double>(const RmsNormGatedParams&, std::span<const float>, std::span<const float>,
                                        std::span<const float>, std::span<float>);

}  // namespace moe
