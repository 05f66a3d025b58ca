#include <cmath>

#include "core/math.h"
#include "ops/matvec_q.h"

namespace moe {

void matvec_q_validate(const MatvecQParams& p, const QuantMatrix& W, std::span<const float> x, std::span<float> y) {
  check_quant(W, "matvec_q", "W");
  MOE_CHECK(W.rows == p.rows && W.cols == p.cols && W.bits == p.bits && W.group_size == p.group_size,
            "matvec_q: W is [" << W.rows << ", " << W.cols << "] bits=" << W.bits << " group_size=" << W.group_size
                               << ", params say [" << p.rows << ", " << p.cols << "] bits=" << p.bits
                               << " group_size=" << p.group_size);
  check_size(x, p.cols, "matvec_q", "x");
  check_size(y, p.rows, "matvec_q", "y");
}

template <class Acc>
void matvec_q_ref(const MatvecQParams& p, const QuantMatrix& W, std::span<const float> x, std::span<float> y) {
  matvec_q_validate(p, W, x, y);
  const int64_t groups = W.groups_per_row();
  const int vpw = W.values_per_word();
  const int64_t words_per_group = p.group_size / vpw;
  const uint32_t mask = (1u << p.bits) - 1u;
  for (int64_t r = 0; r < p.rows; ++r) {
    const uint32_t* wr = W.w + r * W.words_per_row();
    Acc acc = 0;
    for (int64_t g = 0; g < groups; ++g) {  // groups, words, values low bits first: column order
      const Acc s = bf16_to_f32(W.scales[r * groups + g]);
      const Acc b = bf16_to_f32(W.biases[r * groups + g]);
      for (int64_t j = g * words_per_group; j < (g + 1) * words_per_group; ++j) {
        const uint32_t word = wr[j];
        for (int n = 0; n < vpw; ++n) {
          const Acc t = std::fma(Acc((word >> (n * p.bits)) & mask), s, b);
          acc = std::fma(t, Acc(x[j * vpw + n]), acc);
        }
      }
    }
    y[r] = float(acc);
  }
}

template void matvec_q_ref<float>(const MatvecQParams&, const QuantMatrix&, std::span<const float>, std::span<float>);
template void matvec_q_ref<double>(const MatvecQParams&, const QuantMatrix&, std::span<const float>, std::span<float>);

}  // namespace moe
