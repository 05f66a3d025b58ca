// matmul_q: quantized matrix product for T > 1 tokens (prefill), Y = X W^T
// (docs/ops/quantized.md "Canonical CPU order", "Multi-token variants": per (row, token) the
// arithmetic of the single-token matvec).
//
// Shape contract:
//   W  QuantMatrix [rows, cols], bits 2/4/8, group_size G (64 in every checkpoint)
//   X  [tokens, cols] f32, row-major (one token per row)
//   Y  [tokens, rows] f32, row-major (must not alias X)
//   Y[t][r] = sum_c (q[r][c] * s[r][c/G] + b[r][c/G]) * X[t][c]
// Ref tiers: exactly matvec_q_ref per token (ops/matvec_q.h), so row t of Y is bit-identical to
// matvec_q_ref<Acc> of row t of X. Fast tier (ops/matmul_q_fast.cpp): blocks of W rows dequantised
// to f32 per k-panel (exact: the same t = fma(q, s, b) as the reference) and multiplied with every
// token by register-tiled Highway dot products; T = 1 is matvec_q_fast.
// tokens = 0 is allowed (nothing to do); tokens = 1 is the matvec.
#pragma once
#include <cstdint>
#include <span>

#include "core/quant.h"

namespace moe {

// W's shape and format (the matvec's params: each token's row is that matvec), and the tokens.
struct MatmulQParams : QuantMatrixParams {
  int64_t tokens = 1;
  template <class F>
  void visit(F&& f) const {
    f("tokens", tokens);
    QuantMatrixParams::visit(f);
  }
};

template <class Acc>
void matmul_q_ref(const MatmulQParams& p, const QuantMatrix& W, std::span<const float> X, std::span<float> Y);
void matmul_q_fast(const MatmulQParams& p, const QuantMatrix& W, std::span<const float> X, std::span<float> Y);

void matmul_q_validate(const MatmulQParams& p, const QuantMatrix& W, std::span<const float> X, std::span<float> Y);

}  // namespace moe
