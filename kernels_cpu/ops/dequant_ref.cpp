#include <cmath>
#include <type_traits>

#include "core/math.h"
#include "ops/dequant.h"

namespace moe {

void dequant_validate_matrix(const QuantMatrix& W, int64_t rows, int64_t cols, int bits, int group_size,
                         const char* op, const char* what) {
  check_quant(W, op, what);
  MOE_CHECK(W.rows == rows && W.cols == cols, op << ": " << what << " has shape [" << W.rows << ", " << W.cols
                                                 << "], expected [" << rows << ", " << cols << "]");
  MOE_CHECK(W.bits == bits && W.group_size == group_size,
            op << ": " << what << " has bits=" << W.bits << " group_size=" << W.group_size << ", expected bits="
               << bits << " group_size=" << group_size);
}

void dequant_validate(const DequantParams& p, const QuantMatrix& W, std::span<float> y) {
  MOE_CHECK(p.rows >= 0 && p.cols > 0,
            "dequant: rows=" << p.rows << " cols=" << p.cols << ", expected rows >= 0, cols > 0");
  dequant_validate_matrix(W, p.rows, p.cols, p.bits, p.group_size, "dequant", "W");
  check_size(y, p.rows * p.cols, "dequant", "y");
}

template <class Acc>
void dequant_ref(const DequantParams& p, const QuantMatrix& W, std::span<float> y) {
  dequant_validate(p, W, y);
  const int64_t words = W.words_per_row(), groups = W.groups_per_row();
  for (int64_t r = 0; r < p.rows; ++r) {
    const uint32_t* wr = W.w + r * words;
    for (int64_t c = 0; c < p.cols; ++c) {
      const int64_t g = r * groups + c / p.group_size;
      const Acc q = Acc(quant_code(wr, c, p.bits));
      const Acc s = Acc(bf16_to_f32(W.scales[g])), b = Acc(bf16_to_f32(W.biases[g]));
      // f32: the engines' fma; f64: the plain expression (q*s exact, then one rounding to f32).
      if constexpr (std::is_same_v<Acc, float>) {
        y[r * p.cols + c] = std::fma(q, s, b);
      } else {
        y[r * p.cols + c] = float(q * s + b);
      }
    }
  }
}

template void dequant_ref<float>(const DequantParams&, const QuantMatrix&, std::span<float>);
template void dequant_ref<double>(const DequantParams&, const QuantMatrix&, std::span<float>);

}  // namespace moe
