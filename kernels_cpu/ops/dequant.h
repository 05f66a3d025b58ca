// dequant: MLX affine dequantization of a quantized matrix to f32 (docs/ops/quantized.md "Dequantisation",
// docs/ops/formats.md "MLX affine quantization"; MLX `affine_dequantize`, engines' embedding/expert dequant).
//
// Shape contract:
//   W  QuantMatrix [rows, cols], bits 2/4/8, group_size G dividing cols (64 in every checkpoint);
//      its rows/cols/bits/group_size must equal the params
//   y  [rows, cols] f32, row-major
//   y[r][c] = q[r][c] * s[r][c/G] + b[r][c/G]   (s, b bf16 widened exactly; s may be negative)
// Every tier is bit-exact with every other and with the engines: q*s is exact in f32 (an
// integer < 2^8 times an 8-bit significand), so the one rounding of the add is all there is:
// f32 tier fma(q, s, b) == q*s + b; the f64 tier's q*s + b rounded to f32 is the same value
// (the sum of two f32 values done in f64 and rounded to f32 is correctly rounded: 53 >= 2*24+2).
// A NaN/Inf scale or bias reaches exactly the outputs of its group.
#pragma once
#include <cstdint>
#include <span>

#include "core/quant.h"

namespace moe {

using DequantParams = QuantMatrixParams;

template <class Acc>
void dequant_ref(const DequantParams& p, const QuantMatrix& W, std::span<float> y);
void dequant_fast(const DequantParams& p, const QuantMatrix& W, std::span<float> y);

void dequant_validate(const DequantParams& p, const QuantMatrix& W, std::span<float> y);

// Shared with embedding: W's layout is valid and matches the params' shape and format.
void dequant_validate_matrix(const QuantMatrix& W, int64_t rows, int64_t cols, int bits, int group_size,
                         const char* op, const char* what);

}  // namespace moe
