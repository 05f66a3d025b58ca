// dequant_ggml: the rows of a weight in one of ggml's block formats (GGUF tensors) as f32: a
// llama.cpp embedding lookup (get_rows), the dequantisation in front of a matmul, a truth dump of a
// GGUF tensor (docs/ops/quantized.md "ggml block formats").
//
// Shape contract:
//   W  BlockMatrix [rows, cols] of ggml type `type` (ops/matvec_ggml.h): rows * cols / block blocks,
//      row-major, cols a multiple of the type's block (32 or 256; 1 for f32 / f16 / bf16)
//   y  [rows, cols] f32, row-major
//   y[r][c] = W[r][c] rounded once to f32, W[r][c] the exact value of its block (core/ggml_blocks.h)
// Every tier gives the same bits: the truth rounds the exact f64 value to f32, the f32 tier and the
// fast tier decode in f32 where every product of an f16 scale with the format's small integer
// codes is exact and only the last operation (the add of a min or offset) may round, which is then
// the correctly rounded exact value. So is every correct kernel's, up to the sign of a zero (ggml's
// products give -0 for d (q - 32) = 0 with d < 0): bound 0 on the value (spec/dequant_ggml_spec.h).
// NaN / Inf scales reach exactly the values of their block.
#pragma once
#include <cstdint>
#include <span>

#include "ops/matvec_ggml.h"

namespace moe {

struct DequantGgmlParams {
  int64_t type = 2;
  int64_t rows = 0;
  int64_t cols = 0;
  template <class F>
  void visit(F&& f) const {
    f("type", type), f("rows", rows), f("cols", cols);
  }
};

template <class Acc>
void dequant_ggml_ref(const DequantGgmlParams& p, const BlockMatrix& W, std::span<float> y);
void dequant_ggml_fast(const DequantGgmlParams& p, const BlockMatrix& W, std::span<float> y);

void dequant_ggml_validate(const DequantGgmlParams& p, const BlockMatrix& W, std::span<float> y);

}  // namespace moe
