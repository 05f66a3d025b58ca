#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/moe_combine.h"

namespace moe {

// Per token: the routed sum accumulated slot by slot over a contiguous row (vectorised over
// i), then the residual and the gated shared expert in one pass. Tokens over threads.
void moe_combine_fast(const MoeCombineParams& p, std::span<const float> h_mid, std::span<const float> e,
                      std::span<const float> w, std::span<const float> sh, std::span<const float> gamma,
                      std::span<float> out) {
  moe_combine_validate(p, h_mid, e, w, sh, gamma, out);
  const int64_t d = p.dim;
#pragma omp parallel if (p.tokens * (p.k + 2) * d >= (1 << 18))
  {
    std::vector<float> moe(d);
#pragma omp for schedule(static)
    for (int64_t t = 0; t < p.tokens; ++t) {
      std::fill(moe.begin(), moe.end(), 0.0f);
      for (int64_t k = 0; k < p.k; ++k) {
        const float wk = w[t * p.k + k];
        const float* ek = e.data() + (t * p.k + k) * d;
        for (int64_t i = 0; i < d; ++i) moe[i] += wk * ek[i];
      }
      const float sig = p.gated ? 1.0f / (1.0f + std::exp(-gamma[t])) : 1.0f;
      const float* hr = h_mid.data() + t * d;
      const float* sr = sh.data() + t * d;
      float* o = out.data() + t * d;
      for (int64_t i = 0; i < d; ++i) o[i] = hr[i] + moe[i] + sr[i] * sig;
    }
  }
}

}  // namespace moe
