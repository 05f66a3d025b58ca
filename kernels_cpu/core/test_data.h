// Seeded synthetic data shared by the op checks and tests.
#pragma once
#include <cmath>

#include "core/quant.h"
#include "core/rng.h"

namespace moe {

// A quantized matrix with the statistics of an MLX-quantized Gaussian weight N(0, 1/cols):
// uniform random codes, per-group scale ~ the range of 64 Gaussians / (2^bits - 1) (sign random,
// as MLX allows negative scales), bias ~ -scale * (2^bits - 1) / 2 so values centre on 0.
inline QuantStorage random_quant(Rng rng, int64_t rows, int64_t cols, int bits, int group_size = 64) {
  QuantStorage m;
  m.rows = rows, m.cols = cols, m.bits = bits, m.group_size = group_size;
  m.w.resize(rows * cols * bits / 32);
  for (auto& word : m.w) word = rng.next_u32();
  const int64_t n = rows * (cols / group_size);
  m.scales.resize(n), m.biases.resize(n);
  const double sigma = 1.0 / std::sqrt(double(cols));
  const double levels = double((1 << bits) - 1);
  for (int64_t i = 0; i < n; ++i) {
    const double s = 5.0 * sigma / levels * (0.8 + 0.4 * rng.uniform01()) * (rng.uniform01() < 0.1 ? -1 : 1);
    const double b = -s * levels / 2 * (1.0 + 0.1 * rng.normal());
    m.scales[i] = f32_to_bf16_rne(float(s));
    m.biases[i] = f32_to_bf16_rne(float(b));
  }
  return m;
}

}  // namespace moe
