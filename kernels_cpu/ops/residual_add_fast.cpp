#include <Eigen/Core>
#include <algorithm>

#include "ops/residual_add.h"

namespace moe {

// A vectorised add: memory-bound, so threads only pay off on prefill-sized vectors (a
// 4096-wide decode step is ~50 KB, less than one thread's start-up cost).
void residual_add_fast(const ResidualAddParams& p, std::span<const float> a, std::span<const float> b,
                       std::span<float> y) {
  residual_add_validate(p, a, b, y);
  constexpr int64_t kChunk = 1 << 16;
  const int64_t chunks = (p.n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (chunks >= 4)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t i0 = c * kChunk, len = std::min(kChunk, p.n - i0);
    Eigen::Map<Eigen::ArrayXf>(y.data() + i0, len) =
        Eigen::Map<const Eigen::ArrayXf>(a.data() + i0, len) + Eigen::Map<const Eigen::ArrayXf>(b.data() + i0, len);
  }
}

}  // namespace moe
