#include <vector>

#include "ops/matvec_q.h"

namespace moe {

// First version: rows over threads, each group dequantised then dotted. (To be optimised.)
void matvec_q_fast(const MatvecQParams& p, const QuantMatrix& W, std::span<const float> x, std::span<float> y) {
  matvec_q_validate(p, W, x, y);
  const int64_t groups = W.groups_per_row();
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < p.rows; ++r) {
    const uint32_t* wr = W.w + r * W.words_per_row();
    float acc = 0;
    for (int64_t g = 0; g < groups; ++g) {
      const float s = bf16_to_f32(W.scales[r * groups + g]);
      const float b = bf16_to_f32(W.biases[r * groups + g]);
      float part = 0;
      for (int64_t c = g * p.group_size; c < (g + 1) * p.group_size; ++c)
        part += (float(quant_code(wr, c, p.bits)) * s + b) * x[c];
      acc += part;
    }
    y[r] = acc;
  }
}

}  // namespace moe
