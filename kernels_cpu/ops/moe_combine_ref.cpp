#include <cmath>

#include "core/math.h"
#include "ops/moe_combine.h"

namespace moe {

void moe_combine_validate(const MoeCombineParams& p, std::span<const float> h_mid, std::span<const float> e,
                          std::span<const float> w, std::span<const float> sh, std::span<const float> gamma,
                          std::span<float> out) {
  MOE_CHECK(p.tokens >= 0 && p.dim > 0 && p.k >= 0,
            "moe_combine: tokens=" << p.tokens << " dim=" << p.dim << " k=" << p.k
                                   << ", expected tokens >= 0, dim > 0, k >= 0");
  check_size(h_mid, p.tokens * p.dim, "moe_combine", "h_mid");
  check_size(e, p.tokens * p.k * p.dim, "moe_combine", "e");
  check_size(w, p.tokens * p.k, "moe_combine", "w");
  check_size(sh, p.tokens * p.dim, "moe_combine", "sh");
  if (p.gated || !gamma.empty()) check_size(gamma, p.tokens, "moe_combine", "gamma");
  check_size(out, p.tokens * p.dim, "moe_combine", "out");
}

template <class Acc>
void moe_combine_ref(const MoeCombineParams& p, std::span<const float> h_mid, std::span<const float> e,
                     std::span<const float> w, std::span<const float> sh, std::span<const float> gamma,
                     std::span<float> out) {
  moe_combine_validate(p, h_mid, e, w, sh, gamma, out);
  for (int64_t t = 0; t < p.tokens; ++t) {
    const Acc sig = p.gated ? sigmoid(Acc(gamma[t])) : Acc(1);
    for (int64_t i = 0; i < p.dim; ++i) {
      Acc moe = 0;
      for (int64_t k = 0; k < p.k; ++k) moe = std::fma(Acc(w[t * p.k + k]), Acc(e[(t * p.k + k) * p.dim + i]), moe);
      const Acc shg = p.gated ? Acc(sh[t * p.dim + i]) * sig : Acc(sh[t * p.dim + i]);
      out[t * p.dim + i] = float((Acc(h_mid[t * p.dim + i]) + moe) + shg);
    }
  }
}

template void moe_combine_ref<float>(const MoeCombineParams&, std::span<const float>, std::span<const float>,
                                     std::span<const float>, std::span<const float>, std::span<const float>,
                                     std::span<float>);
template void moe_combine_ref<double>(const MoeCombineParams&, std::span<const float>, std::span<const float>,
                                      std::span<const float>, std::span<const float>, std::span<const float>,
                                      std::span<float>);

}  // namespace moe
