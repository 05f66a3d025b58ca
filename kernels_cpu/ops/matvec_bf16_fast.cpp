#include <cmath>

#include "ops/matvec_bf16.h"

namespace moe {
namespace {

// 16 independent accumulators: one AVX-512 register (or two AVX2 ones) of fmas per step, the
// bf16 -> f32 widening (a 16-bit shift) done in registers on the fly.
constexpr int kLanes = 16;

float dot_row(const bf16* w, const float* x, int64_t cols) {
  float acc[kLanes] = {};
  int64_t c = 0;
  for (; c + kLanes <= cols; c += kLanes)
    for (int k = 0; k < kLanes; ++k) acc[k] = std::fma(bf16_to_f32(w[c + k]), x[c + k], acc[k]);
  float tail = 0.0f;
  for (; c < cols; ++c) tail = std::fma(bf16_to_f32(w[c]), x[c], tail);
  for (int half = kLanes / 2; half > 0; half /= 2)
    for (int k = 0; k < half; ++k) acc[k] += acc[k + half];
  return acc[0] + tail;
}

}  // namespace

// Rows spread over threads once there is enough work to pay for the fork.
void matvec_bf16_fast(const MatvecBf16Params& p, std::span<const bf16> W, std::span<const float> x,
                      std::span<float> y) {
  matvec_bf16_validate(p, W, x, y);
#pragma omp parallel for schedule(static) if (p.rows * p.cols >= (1 << 16))
  for (int64_t r = 0; r < p.rows; ++r) y[r] = dot_row(W.data() + r * p.cols, x.data(), p.cols);
}

}  // namespace moe
