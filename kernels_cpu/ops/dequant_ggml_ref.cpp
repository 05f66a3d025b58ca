#include <type_traits>
#include <vector>

#include "core/ggml_blocks.h"
#include "core/math.h"
#include "ops/dequant_ggml.h"

namespace moe {

void dequant_ggml_validate(const DequantGgmlParams& p, const BlockMatrix& W, std::span<float> y) {
  check_block_matrix(W, p.type, p.rows, p.cols, "dequant_ggml", "W");
  check_size(y, p.rows * p.cols, "dequant_ggml", "y");
}

// Row by row: the exact values rounded to f32 (Acc = double) or ggml's f32 decoding (Acc = float).
template <class Acc>
void dequant_ggml_ref(const DequantGgmlParams& p, const BlockMatrix& W, std::span<float> y) {
  dequant_ggml_validate(p, W, y);
  const size_t rb = W.row_bytes();
  std::vector<double> exact(static_cast<size_t>(p.cols));
  for (int64_t r = 0; r < p.rows; ++r) {
    const std::span<const uint8_t> row(W.data + size_t(r) * rb, rb);
    float* out = y.data() + r * p.cols;
    if constexpr (std::is_same_v<Acc, double>) {
      ggml_dequant_f64(W.type, row, p.cols, exact.data());
      for (int64_t c = 0; c < p.cols; ++c) out[c] = float(exact[size_t(c)]);
    } else {
      ggml_dequant_f32(W.type, row, p.cols, out);
    }
  }
}

template void dequant_ggml_ref<float>(const DequantGgmlParams&, const BlockMatrix&, std::span<float>);
template void dequant_ggml_ref<double>(const DequantGgmlParams&, const BlockMatrix&, std::span<float>);

}  // namespace moe
