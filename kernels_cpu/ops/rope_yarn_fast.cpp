#include <Eigen/Core>
#include <cmath>
#include <vector>

#include "ops/rope.h"
#include "ops/rope_yarn.h"

namespace moe {

// The f32 tier's frequency table and attention factor (the same function, compiled without
// contraction in rope_yarn_ref.cpp), the f32 angle and libm cosf/sinf once per token rather than
// once per head (Eigen's vectorised sin/cos do not promise the ~1 ulp the bound assumes), the
// rotation vectorised over the pairs: a stride-2 view for the interleaved layout. 128 q heads
// share each token's table. Tokens spread over threads from 2^18 elements (32 tokens of Cogito's
// q_pe): below that the fork/join costs more than it saves, as in rope_fast.
void rope_yarn_fast(const RopeYarnParams& p, std::span<const int64_t> positions, std::span<const float> x,
                    std::span<float> y) {
  rope_yarn_validate(p, positions, x, y);
  const int64_t R = p.rotary_dim, half = R / 2;
  const std::vector<float> inv = rope_yarn_inv_freq<float>(p);
  const float m = rope_yarn_attention_factor<float>(p);
  using Arr = Eigen::ArrayXf;
  using Half = Eigen::Map<const Arr>;
  using Strided = Eigen::Map<const Arr, 0, Eigen::InnerStride<2>>;
  using Out = Eigen::Map<Arr>;
#pragma omp parallel if (p.tokens * p.heads * R >= (1 << 18))
  {
    Arr c(half), s(half), y1(half), y2(half);  // per thread; y1/y2 keep x intact until both are done
#pragma omp for schedule(static)
    for (int64_t t = 0; t < p.tokens; ++t) {
      const float pos = float(positions[t]);
      rotary_table_f32(pos, inv.data(), half, m, c, s);
      for (int64_t h = 0; h < p.heads; ++h) {
        const float* xh = x.data() + (t * p.heads + h) * R;
        if (p.interleaved) {
          const Strided x0(xh, half), x1(xh + 1, half);
          y1 = x0 * c - x1 * s;
          y2 = x0 * s + x1 * c;
        } else {
          const Half x0(xh, half), x1(xh + half, half);
          y1 = x0 * c - x1 * s;
          y2 = x0 * s + x1 * c;
        }
        float* yh = y.data() + (t * p.heads + h) * R;
        Out(yh, half) = y1;
        Out(yh + half, half) = y2;
      }
    }
  }
}

}  // namespace moe
