#include <cmath>
#include <functional>
#include <type_traits>

#include "core/math.h"
#include "ops/matvec_bf16.h"

namespace moe {

void matvec_bf16_validate(const MatvecBf16Params& p, std::span<const bf16> W, std::span<const float> x,
                          std::span<float> y) {
  MOE_CHECK(p.rows >= 0 && p.cols > 0,
            "matvec_bf16: rows=" << p.rows << " cols=" << p.cols << ", expected rows >= 0, cols > 0");
  check_size(W, p.rows * p.cols, "matvec_bf16", "W");
  check_size(x, p.cols, "matvec_bf16", "x");
  check_size(y, p.rows, "matvec_bf16", "y");
  // y is written row by row while x is still being read: they must not overlap.
  // std::less: a total order on pointers even into different arrays.
  const std::less<const float*> lt;
  const bool overlap = !y.empty() && lt(y.data(), x.data() + x.size()) && lt(x.data(), y.data() + y.size());
  MOE_CHECK(!overlap, "matvec_bf16: y overlaps x, expected separate buffers");
}

template <class Acc>
void matvec_bf16_ref(const MatvecBf16Params& p, std::span<const bf16> W, std::span<const float> x,
                     std::span<float> y) {
  matvec_bf16_validate(p, W, x, y);
  // Rows are independent, each summed by one thread in column order: threads never change bits.
  ref_row_blocks(p.rows, p.rows * p.cols, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const bf16* wr = W.data() + r * p.cols;
      Acc acc = 0;
      for (int64_t c = 0; c < p.cols; ++c) {
        const Acc w = Acc(bf16_to_f32(wr[c]));
        if constexpr (std::is_same_v<Acc, float>) {
          acc = std::fma(w, x[c], acc);  // CPU-R's mul_add
        } else {
          acc += w * Acc(x[c]);  // exact product, one f64 rounding per add
        }
      }
      y[r] = float(acc);
    }
  });
}

template void matvec_bf16_ref<float>(const MatvecBf16Params&, std::span<const bf16>, std::span<const float>,
                                     std::span<float>);
template void matvec_bf16_ref<double>(const MatvecBf16Params&, std::span<const bf16>, std::span<const float>,
                                      std::span<float>);

}  // namespace moe
