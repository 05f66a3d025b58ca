#include <cmath>

#include "ops/dequant.h"

namespace moe {
namespace {

// One row, BITS known at compile time so the unpacking of a word is a fixed shift sequence the
// compiler unrolls and vectorises across words.
template <int BITS>
void dequant_row(const uint32_t* w, const bf16* scales, const bf16* biases, int64_t cols, int group_size,
                 float* y) {
  constexpr int vpw = 32 / BITS;
  constexpr uint32_t mask = (1u << BITS) - 1u;
  const int64_t words_per_group = group_size / vpw;
  for (int64_t g = 0; g < cols / group_size; ++g) {
    const float s = bf16_to_f32(scales[g]), b = bf16_to_f32(biases[g]);
    const uint32_t* wg = w + g * words_per_group;
    float* yg = y + g * group_size;
    for (int64_t j = 0; j < words_per_group; ++j) {
      const uint32_t word = wg[j];
      for (int n = 0; n < vpw; ++n) yg[j * vpw + n] = std::fma(float((word >> (n * BITS)) & mask), s, b);
    }
  }
}

}  // namespace

// Rows spread over threads once there is enough work to pay for the fork.
void dequant_fast(const DequantParams& p, const QuantMatrix& W, std::span<float> y) {
  dequant_validate(p, W, y);
  const int64_t words = W.words_per_row(), groups = W.groups_per_row();
#pragma omp parallel for schedule(static) if (p.rows * p.cols >= (1 << 18))
  for (int64_t r = 0; r < p.rows; ++r) {
    const uint32_t* w = W.w + r * words;
    const bf16 *s = W.scales + r * groups, *b = W.biases + r * groups;
    float* yr = y.data() + r * p.cols;
    if (p.bits == 2) dequant_row<2>(w, s, b, p.cols, p.group_size, yr);
    if (p.bits == 4) dequant_row<4>(w, s, b, p.cols, p.group_size, yr);
    if (p.bits == 8) dequant_row<8>(w, s, b, p.cols, p.group_size, yr);
  }
}

}  // namespace moe
