// MLX affine quantizer and the 4-bit -> 2-bit expert requantiser: produce QuantStorage
// (core/quant.h) from f32 weights, for fixtures, tests and checks.
//
// Shape contract:
//   mlx_quantize(w, rows, cols, bits, group_size)
//     w        [rows, cols] f32 row-major, every value finite (NaN/Inf -> moe::Error naming the
//              row and column: MLX itself casts a NaN code to an integer, which is undefined)
//     bits     2, 4 or 8; group_size a positive multiple of 32/bits dividing cols
//     returns  QuantStorage [rows, cols] with w [rows, cols*bits/32] u32, scales/biases
//              [rows, cols/group_size] bf16
//   Follows MLX's CPU `quantize` (mlx/backend/cpu/quantized.cpp, docs/ops/formats.md "MLX affine quantization")
//   operation for operation in f32, per group of group_size consecutive columns of a row:
//     n = 2^bits - 1; s = max((max - min) / n, 1e-7)
//     |min| > |max|: edge = min, s = +s   else: edge = max, s = -s   (the scale may be negative)
//     q0 = rint(edge / s); q0 != 0: s = edge / q0, bias = edge   else bias = 0
//     q = clamp(rint((w - bias) / s), 0, n)     (0.0 lands exactly on code -q0)
//     scale and bias are stored rounded to bf16 (RNE) after q has been computed with the f32
//     values, as MLX does for bf16 weights (its scales take w's dtype; the checkpoints are bf16).
//     So 0.0 decodes to exactly 0 only up to that rounding (within half a step at 2/4 bits).
//   Packing: low bits first, value k of a word in bits [k*bits, (k+1)*bits).
//
//   requantize_2bit(w4)  (docs/ops/formats.md "2-bit requantisation", UP repack_experts_2bit.py)
//     w4       a valid 4-bit QuantMatrix [rows, cols] whose group_size is a multiple of 16
//     returns  2-bit QuantStorage, same rows/cols/group_size. Per group, in f32:
//              f = q*s + b (exact: q*s is exact, one rounding), S2 = (max f - min f) / 3,
//              B2 = min f, q2 = clamp(rint((f - B2) / D), 0, 3) with D = S2, or 1 when S2 == 0;
//              S2 and B2 stored as bf16 by truncation (a degenerate group stores S2 = 0, and
//              decodes exactly to its constant B2 when B2 is a bf16).
#pragma once
#include <cstdint>
#include <span>

#include "core/quant.h"

namespace moe {

QuantStorage mlx_quantize(std::span<const float> w, int64_t rows, int64_t cols, int bits, int group_size = 64);

QuantStorage requantize_2bit(const QuantMatrix& w4);

}  // namespace moe
