// dequant_ggml_fast: the rows of a ggml block-format weight as f32 (shape contract in
// ops/dequant_ggml.h). Threads split the rows in chunks; each row is decoded by ggml_dequant_f32,
// whose values are the reference's bits (the op has one correct answer per weight).
#include "core/ggml_blocks.h"
#include "ops/dequant_ggml.h"

namespace moe {

void dequant_ggml_fast(const DequantGgmlParams& p, const BlockMatrix& W, std::span<float> y) {
  dequant_ggml_validate(p, W, y);
  if (p.rows == 0) return;
  const size_t rb = W.row_bytes();
  // Below ~64 KiB of output a thread team costs more than it saves (an embedding lookup of a few rows).
  const bool parallel = p.rows * p.cols >= (1 << 14);
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t r = 0; r < p.rows; ++r)
    ggml_dequant_f32(W.type, std::span<const uint8_t>(W.data + size_t(r) * rb, rb), p.cols, y.data() + r * p.cols);
}

}  // namespace moe
