#include <cmath>
#include <vector>

#include "ops/softmax.h"

namespace moe {

// Rows over threads from 2^20 elements (a few ms of exps; below, a fork/join costs more than it
// saves on a loaded machine): a prefill's heads x tokens rows, a long context's heads. Each row
// in the f32 order of ops/softmax.h, its loops vectorised by the compiler (the max and the sum
// reassociate, which the bound's any-order sums allow).
void softmax_fast(const SoftmaxParams& p, std::span<const float> x, std::span<const float> mask, std::span<float> y) {
  softmax_validate(p, x, mask, y);
  const int64_t C = p.cols;
#pragma omp parallel if (p.rows * C >= (1 << 20))
  {
    std::vector<float> z(static_cast<size_t>(C));
#pragma omp for schedule(static)
    for (int64_t r = 0; r < p.rows; ++r) {
      const float* xr = x.data() + r * C;
      const float* mr = p.mask_rows > 0 ? mask.data() + (r % p.mask_rows) * C : nullptr;
      for (int64_t c = 0; c < C; ++c) z[size_t(c)] = xr[c] * p.scale + (mr ? mr[c] : 0.0f);
      // Strict >, as core/softmax.h: a NaN never becomes the max (its exp still reaches the sum).
      float m = z[0];
      for (int64_t c = 1; c < C; ++c) m = z[size_t(c)] > m ? z[size_t(c)] : m;
      float sum = 0;
      for (int64_t c = 0; c < C; ++c) sum += (z[size_t(c)] = std::exp(z[size_t(c)] - m));
      const float inv = 1.0f / sum;
      float* yr = y.data() + r * C;
      for (int64_t c = 0; c < C; ++c) yr[c] = z[size_t(c)] * inv;
    }
  }
}

}  // namespace moe
