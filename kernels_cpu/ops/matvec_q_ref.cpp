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

namespace {

// Rows [0, W.rows) in the canonical order (ops/matvec_q.h). std::fma is correctly rounded
// wherever it runs, so the two builds below give the same bits; the FMA build makes it one
// instruction instead of a libm call per term (a baseline x86-64 build has no FMA to inline).
template <class Acc>
inline void rows(const QuantMatrix& W, const float* x, float* y, int64_t r0, int64_t r1) {
  const int64_t groups = W.groups_per_row();
  const int vpw = W.values_per_word();
  const int64_t words_per_group = W.group_size / vpw;
  const uint32_t mask = (1u << W.bits) - 1u;
  for (int64_t r = r0; r < r1; ++r) {
    const uint32_t* wr = W.w + r * W.words_per_row();
    Acc acc = 0;
    for (int64_t g = 0; g < groups; ++g) {  // groups, words, values low bits first: column order
      const Acc s = bf16_to_f32(W.scales[r * groups + g]);
      const Acc b = bf16_to_f32(W.biases[r * groups + g]);
      for (int64_t j = g * words_per_group; j < (g + 1) * words_per_group; ++j) {
        const uint32_t word = wr[j];
        for (int n = 0; n < vpw; ++n) {
          const Acc t = std::fma(Acc((word >> (n * W.bits)) & mask), s, b);
          acc = std::fma(t, Acc(x[j * vpw + n]), acc);
        }
      }
    }
    y[r] = float(acc);
  }
}

#if defined(__x86_64__)
template <class Acc>
__attribute__((target("fma"))) void rows_fma(const QuantMatrix& W, const float* x, float* y, int64_t r0, int64_t r1) {
  rows<Acc>(W, x, y, r0, r1);
}
#endif

}  // namespace

// Rows are independent and each is summed by one thread in column order, so threads (an lm_head
// is 0.5 G terms) change the speed, never the bits.
template <class Acc>
void matvec_q_ref(const MatvecQParams& p, const QuantMatrix& W, std::span<const float> x, std::span<float> y) {
  matvec_q_validate(p, W, x, y);
#if defined(__x86_64__)
  const bool fma = __builtin_cpu_supports("fma");
#endif
  ref_row_blocks(W.rows, W.rows * W.cols, [&](int64_t r0, int64_t r1) {
#if defined(__x86_64__)
    if (fma) return rows_fma<Acc>(W, x.data(), y.data(), r0, r1);
#endif
    rows<Acc>(W, x.data(), y.data(), r0, r1);
  });
}

template void matvec_q_ref<float>(const MatvecQParams&, const QuantMatrix&, std::span<const float>, std::span<float>);
template void matvec_q_ref<double>(const MatvecQParams&, const QuantMatrix&, std::span<const float>, std::span<float>);

}  // namespace moe
