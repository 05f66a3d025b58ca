// matvec_ggml_fast: Y = X W^T for W in a ggml block format (shape contract in ops/matvec_ggml.h).
//
// Every term is the reference f32 tier's: the weight rounded once to f32 (core/ggml_blocks.h
// ggml_dequant_f32) times x; only the order of the sum differs (16 partial sums, added pairwise),
// so the error is that of a dot product of `cols` terms in another order, and NaN/Inf reach Y as
// in the reference. Threads split the rows; each thread decodes one row into a buffer and dots it
// with every token, so W is read once per call whatever the token count.
#include <algorithm>
#include <vector>

#include "core/ggml_blocks.h"
#include "ops/matvec_ggml.h"

namespace moe {
namespace {

constexpr int kParts = 16;

float dot(const float* w, const float* x, int64_t n) {
  float part[kParts] = {};
  int64_t c = 0;
  for (; c + kParts <= n; c += kParts)
    for (int k = 0; k < kParts; ++k) part[k] += w[c + k] * x[c + k];
  for (; c < n; ++c) part[c % kParts] += w[c] * x[c];
  for (int width = kParts / 2; width >= 1; width /= 2)
    for (int k = 0; k < width; ++k) part[k] += part[k + width];
  return part[0];
}

}  // namespace

void matvec_ggml_fast(const MatvecGgmlParams& p, const BlockMatrix& W, std::span<const float> X, std::span<float> Y) {
  matvec_ggml_validate(p, W, X, Y);
  if (p.rows == 0 || p.tokens == 0) return;
  const size_t rb = W.row_bytes();
  constexpr int64_t kRowsPerTask = 16;
  const int64_t tasks = (p.rows + kRowsPerTask - 1) / kRowsPerTask;
#pragma omp parallel
  {
    std::vector<float> w(static_cast<size_t>(p.cols));
#pragma omp for schedule(dynamic, 4)
    for (int64_t task = 0; task < tasks; ++task)
      for (int64_t r = task * kRowsPerTask; r < std::min(p.rows, (task + 1) * kRowsPerTask); ++r) {
        ggml_dequant_f32(W.type, {W.data + size_t(r) * rb, rb}, p.cols, w.data());
        for (int64_t t = 0; t < p.tokens; ++t) Y[size_t(t * p.rows + r)] = dot(w.data(), X.data() + t * p.cols, p.cols);
      }
  }
}

}  // namespace moe
