#include <Eigen/Core>
#include <cmath>

#include "core/math.h"
#include "ops/rmsnorm_gated.h"

namespace moe {

// Per head: Eigen's vectorised sum of squares, the gate computed with libm expf (scalar: its
// error is the documented ~1 ulp the bound assumes, which Eigen's own vectorised exp does not
// promise), then one vectorised product. expf dominates (~5 ns an element), so heads spread over
// threads from 2^16 elements (~0.3 ms of work, an 8-token prefill of A17B) on.
void rmsnorm_gated_fast(const RmsNormGatedParams& p, std::span<const float> o, std::span<const float> z,
                        std::span<const float> w, std::span<float> y) {
  rmsnorm_gated_validate(p, o, z, w, y);
  const int64_t dv = p.head_dim, rows = p.tokens * p.heads;
  using In = Eigen::Map<const Eigen::ArrayXf>;
  const In wv(w.data(), dv);
#pragma omp parallel if (rows * dv >= (1 << 16))
  {
    Eigen::ArrayXf gate(dv);  // per thread: z may be the output buffer, so the gate is kept aside
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t off = r * dv;
      const In orow(o.data() + off, dv);
      for (int64_t i = 0; i < dv; ++i) gate[i] = silu(z[off + i]);
      const float inv = 1.0f / std::sqrt(orow.square().sum() / float(dv) + p.eps);
      Eigen::Map<Eigen::ArrayXf>(y.data() + off, dv) = ((orow * inv) * wv) * gate;
    }
  }
}

}  // namespace moe
