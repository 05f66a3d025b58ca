#include <Eigen/Core>
#include <cmath>
#include <cstring>
#include <vector>

#include "ops/rope.h"

namespace moe {

// Same f32 angles as the engines (powf table once per call, (float)pos * inv_freq, libm
// cosf/sinf: Eigen's vectorised sin/cos do not promise the ~1 ulp the bound assumes), computed
// once per token instead of once per head; the rotation itself is vectorised over the pairs.
// Tokens spread over threads only from 2^18 elements (a 32-token prefill of 32 q heads, ~0.5 ms
// of single-thread work): below that the fork/join costs more than it saves.
void rope_fast(const RopeParams& p, std::span<const int64_t> positions, std::span<const float> x, std::span<float> y) {
  rope_validate(p, positions, x, y);
  const int64_t D = p.head_dim, R = p.rotary_dim, half = R / 2;
  std::vector<float> inv_freq(half);
  for (int64_t i = 0; i < half; ++i) inv_freq[i] = 1.0f / std::pow(p.theta, float(2 * i) / float(R));
  using Arr = Eigen::ArrayXf;
  using In = Eigen::Map<const Arr>;
  using Out = Eigen::Map<Arr>;
#pragma omp parallel if (p.tokens * p.heads * D >= (1 << 18))
  {
    Arr c(half), s(half), y1(half), y2(half);  // per thread; y1/y2 keep x intact until both are done
#pragma omp for schedule(static)
    for (int64_t t = 0; t < p.tokens; ++t) {
      const float pos = float(positions[t]);
      rotary_table_f32(pos, inv_freq.data(), half, 1.0f, c, s);
      for (int64_t h = 0; h < p.heads; ++h) {
        const int64_t base = (t * p.heads + h) * D;
        const In x1(x.data() + base, half), x2(x.data() + base + half, half);
        y1 = x1 * c - x2 * s;
        y2 = x1 * s + x2 * c;
        Out(y.data() + base, half) = y1;
        Out(y.data() + base + half, half) = y2;
        if (R < D && y.data() != x.data())
          std::memmove(y.data() + base + R, x.data() + base + R, sizeof(float) * (D - R));
      }
    }
  }
}

}  // namespace moe
