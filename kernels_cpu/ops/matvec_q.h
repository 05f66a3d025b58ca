// matvec_q: quantized matrix-vector product y = W x (docs/ops/quantized.md).
//
// Shape contract:
//   W  QuantMatrix [rows, cols], bits 2/4/8, group_size G (64 in every checkpoint)
//   x  [cols] f32
//   y  [rows] f32 (must not alias x)
//   y[r] = sum_c (q[r][c] * s[r][c/G] + b[r][c/G]) * x[c]
// f32 tier order (docs/ops/quantized.md "Canonical CPU order", CPU-C/CPU-R bit-exact): per row, groups ascending, words
// ascending, values low bits first: t = fma(q, s, b) (exact: q*s is exact), acc = fma(t, x, acc).
#pragma once
#include <cstdint>
#include <span>

#include "core/quant.h"

namespace moe {

using MatvecQParams = QuantMatrixParams;

template <class Acc>
void matvec_q_ref(const MatvecQParams& p, const QuantMatrix& W, std::span<const float> x, std::span<float> y);
void matvec_q_fast(const MatvecQParams& p, const QuantMatrix& W, std::span<const float> x, std::span<float> y);

void matvec_q_validate(const MatvecQParams& p, const QuantMatrix& W, std::span<const float> x, std::span<float> y);

}  // namespace moe
