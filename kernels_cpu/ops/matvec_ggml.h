// matvec_ggml: the matrix-vector product of a weight in one of ggml's block formats (GGUF
// tensors: q4_0, q4_1, q5_0, q5_1, q8_0, q2_K-q6_K, iq4_nl, iq4_xs, and f32 / f16 / bf16), for
// one token (a decode matvec) or several (Y = X W^T, ggml's mul_mat with a few columns)
// (docs/ops/quantized.md "ggml block formats").
//
// Shape contract:
//   W  BlockMatrix [rows, cols] of ggml type `type`: rows * cols / block blocks, row-major, each
//      row starting at a block boundary (cols a multiple of the type's block: 32 or 256)
//   X  [tokens, cols] f32, row-major (one token per row)
//   Y  [tokens, rows] f32, row-major (must not alias X)
//   Y[t][r] = sum_c W[r][c] X[t][c], W[r][c] the exact value of its block (core/ggml_blocks.h)
// Tiers: ref<double> sums the exact weights in f64. ref<float> is the natural f32 order of a
// dequantising kernel (ggml's own f32 mul_mat_vec shaders, llama.cpp's dequantise-then-dot paths):
// each weight rounded once to f32 (= ggml's to_float), acc = fma(w, x, acc) in column order. ggml's
// CPU backend instead quantises x to 8 bits first (q8_0 / q8_K dot products): a different, lossy
// computation that this op does not reproduce. Fast: rows over threads. q4_0 and q4_K on x86
// (AVX2, AVX-512): codes to floats in registers and one pass, each block's codes summed before
// its scale, the min term apart (d (sum q x) + m (sum x): ops/matvec_ggml_fast_x86.cpp), x kept
// f32; the other formats and targets: each row decoded to f32 (the reference's rounded weights)
// and dotted with every token in SIMD partial sums.
// tokens = 0 is allowed (nothing to do).
#pragma once
#include <cstdint>
#include <span>

#include "core/check.h"

namespace moe {

// A weight matrix in a ggml block format: `data` holds rows * (cols / block) blocks.
struct BlockMatrix {
  uint32_t type = 0;  // ggml type id (GGUF): 2 = q4_0, 8 = q8_0, 12 = q4_K, 14 = q6_K, ...
  const uint8_t* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  // Bytes of one row and of the whole matrix; throws for a type core/ggml_blocks.h does not decode.
  size_t row_bytes() const;
  size_t bytes() const { return size_t(rows) * row_bytes(); }
  BlockMatrix row_block(int64_t r0, int64_t n) const { return {type, data + size_t(r0) * row_bytes(), n, cols}; }
};

// W's type and shape, and the tokens.
struct MatvecGgmlParams {
  int64_t type = 2;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t tokens = 1;
  template <class F>
  void visit(F&& f) const {
    f("type", type), f("rows", rows), f("cols", cols), f("tokens", tokens);
  }
};

// Validates W's type and layout against the params; `op` and `what` name the caller and tensor.
void check_block_matrix(const BlockMatrix& W, int64_t type, int64_t rows, int64_t cols, const char* op,
                        const char* what);

template <class Acc>
void matvec_ggml_ref(const MatvecGgmlParams& p, const BlockMatrix& W, std::span<const float> X, std::span<float> Y);
void matvec_ggml_fast(const MatvecGgmlParams& p, const BlockMatrix& W, std::span<const float> X, std::span<float> Y);

void matvec_ggml_validate(const MatvecGgmlParams& p, const BlockMatrix& W, std::span<const float> X,
                          std::span<float> Y);

}  // namespace moe
