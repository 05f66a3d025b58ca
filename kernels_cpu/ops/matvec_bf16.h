// matvec_bf16: unquantised BF16 matrix-vector product y = W x (docs/ops/quantized.md "BF16 matvec"; CPU-R
// `bf16_matvec_cpu`, Metal `bf16_matvec`). Used for the DeepSeek-V3 / Cogito router gate
// [256, 7168], whose weight is stored unquantised.
//
// Shape contract:
//   W  [rows, cols] bf16 (raw 16-bit patterns), row-major
//   x  [cols] f32
//   y  [rows] f32 (must not alias x)
//   y[r] = sum_c W[r][c] * x[c]
// f32 tier order (CPU-R, bit-exact with it): acc = 0; for c ascending acc = fma(W[r][c], x[c],
// acc); y[r] = acc. The f64 tier's products are exact (8 x 24 significant bits < 53).
// NaN in x reaches every output (0 * NaN = NaN); NaN in W reaches its row's output.
#pragma once
#include <cstdint>
#include <span>

#include "core/bf16.h"

namespace moe {

struct MatvecBf16Params {
  int64_t rows = 0;
  int64_t cols = 0;
  template <class F>
  void visit(F&& f) const {
    f("rows", rows), f("cols", cols);
  }
};

template <class Acc>
void matvec_bf16_ref(const MatvecBf16Params& p, std::span<const bf16> W, std::span<const float> x,
                     std::span<float> y);
void matvec_bf16_fast(const MatvecBf16Params& p, std::span<const bf16> W, std::span<const float> x,
                      std::span<float> y);

void matvec_bf16_validate(const MatvecBf16Params& p, std::span<const bf16> W, std::span<const float> x,
                          std::span<float> y);

}  // namespace moe
