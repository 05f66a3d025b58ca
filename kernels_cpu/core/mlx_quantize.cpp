#include "core/mlx_quantize.h"

#include <algorithm>
#include <cmath>

namespace moe {
namespace {

// Code of one value, clamped to [0, n] like MLX. A NaN here (only reachable through a scale
// that overflowed or underflowed to 0) would be an undefined float->int cast in MLX: refuse it.
uint32_t affine_code(float v, float bias, float scale, float n, const char* op, int64_t r, int64_t c) {
  const float t = std::rint((v - bias) / scale);
  MOE_CHECK(!std::isnan(t), op << ": value " << v << " at row " << r << " column " << c
                               << " gives no code (bias " << bias << ", scale " << scale << ")");
  return uint32_t(std::min(std::max(t, 0.0f), n));
}

void put_code(std::vector<uint32_t>& words, int64_t row_word0, int64_t c, uint32_t q, int bits) {
  const int vpw = 32 / bits;
  words[row_word0 + c / vpw] |= q << ((c % vpw) * bits);
}

}  // namespace

QuantStorage mlx_quantize(std::span<const float> w, int64_t rows, int64_t cols, int bits, int group_size) {
  MOE_CHECK(bits == 2 || bits == 4 || bits == 8, "mlx_quantize: bits=" << bits << ", expected 2, 4 or 8");
  MOE_CHECK(group_size > 0 && group_size % (32 / bits) == 0,
            "mlx_quantize: group_size=" << group_size << ", expected a positive multiple of " << 32 / bits);
  MOE_CHECK(rows >= 0 && cols > 0, "mlx_quantize: shape [" << rows << ", " << cols << "], expected rows >= 0, cols > 0");
  MOE_CHECK(cols % group_size == 0,
            "mlx_quantize: cols=" << cols << ", expected a multiple of group_size=" << group_size);
  MOE_CHECK(int64_t(w.size()) == rows * cols,
            "mlx_quantize: w has " << w.size() << " elements, expected " << rows * cols);

  QuantStorage out;
  out.rows = rows, out.cols = cols, out.bits = bits, out.group_size = group_size;
  const int64_t words_per_row = cols * bits / 32, groups = cols / group_size;
  out.w.assign(rows * words_per_row, 0u);
  out.scales.resize(rows * groups), out.biases.resize(rows * groups);

  const float n_bins = float((1 << bits) - 1);
  const float eps = 1e-7f;  // MLX's floor on the step: a constant group still gets a usable scale
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t g = 0; g < groups; ++g) {
      const float* wg = w.data() + r * cols + g * group_size;
      float w_min = INFINITY, w_max = -INFINITY;
      for (int j = 0; j < group_size; ++j) {
        MOE_CHECK(std::isfinite(wg[j]), "mlx_quantize: w[" << r << "][" << g * group_size + j << "] = " << wg[j]
                                                            << ", expected a finite value");
        w_max = std::max(w_max, wg[j]);
        w_min = std::min(w_min, wg[j]);
      }
      // The edge (the end of larger magnitude) maps exactly to code 0: towards it the scale points
      // away, so a negative edge gives a positive scale and a positive edge a negative one.
      const bool min_is_edge = std::fabs(w_min) > std::fabs(w_max);
      float scale = std::max((w_max - w_min) / n_bins, eps);
      scale = min_is_edge ? scale : -scale;
      const float edge = min_is_edge ? w_min : w_max;
      const float q0 = std::rint(edge / scale);
      float bias = 0.0f;
      if (q0 != 0.0f) {  // stretch the step so that edge = -q0 * scale exactly: 0.0 is representable
        scale = edge / q0;
        bias = edge;
      }
      MOE_CHECK(std::isfinite(scale) && scale != 0.0f,
                "mlx_quantize: row " << r << " group " << g << " (min " << w_min << ", max " << w_max
                                     << ") has no finite nonzero scale");
      for (int j = 0; j < group_size; ++j) {
        const int64_t c = g * group_size + j;
        put_code(out.w, r * words_per_row, c, affine_code(wg[j], bias, scale, n_bins, "mlx_quantize", r, c), bits);
      }
      out.scales[r * groups + g] = f32_to_bf16_rne(scale);
      out.biases[r * groups + g] = f32_to_bf16_rne(bias);
      MOE_CHECK(std::isfinite(bf16_to_f32(out.scales[r * groups + g])),
                "mlx_quantize: row " << r << " group " << g << " scale " << scale << " overflows bf16");
    }
  }
  return out;
}

QuantStorage requantize_2bit(const QuantMatrix& w4) {
  check_quant(w4, "requantize_2bit", "w4");
  MOE_CHECK(w4.bits == 4, "requantize_2bit: w4 has bits=" << w4.bits << ", expected 4");
  MOE_CHECK(w4.group_size % 16 == 0,
            "requantize_2bit: w4 has group_size=" << w4.group_size << ", expected a multiple of 16 (2-bit packing)");

  QuantStorage out;
  out.rows = w4.rows, out.cols = w4.cols, out.bits = 2, out.group_size = w4.group_size;
  const int64_t words_in = w4.words_per_row(), words_out = w4.cols / 16, groups = w4.groups_per_row();
  out.w.assign(w4.rows * words_out, 0u);
  out.scales.resize(w4.rows * groups), out.biases.resize(w4.rows * groups);

  std::vector<float> f(w4.group_size);
  for (int64_t r = 0; r < w4.rows; ++r) {
    const uint32_t* row = w4.w + r * words_in;
    for (int64_t g = 0; g < groups; ++g) {
      const float s = bf16_to_f32(w4.scales[r * groups + g]), b = bf16_to_f32(w4.biases[r * groups + g]);
      float f_min = INFINITY, f_max = -INFINITY;
      for (int j = 0; j < w4.group_size; ++j) {
        const int64_t c = g * w4.group_size + j;
        f[j] = std::fma(float(quant_code(row, c, 4)), s, b);  // == q*s + b: q*s is exact
        MOE_CHECK(std::isfinite(f[j]), "requantize_2bit: w4[" << r << "][" << c << "] decodes to " << f[j]
                                                              << " (scale " << s << ", bias " << b << ")");
        f_min = std::min(f_min, f[j]);
        f_max = std::max(f_max, f[j]);
      }
      const float s2 = (f_max - f_min) / 3.0f;
      const float div = s2 == 0.0f ? 1.0f : s2;  // a constant group: every code is 0
      for (int j = 0; j < w4.group_size; ++j) {
        const int64_t c = g * w4.group_size + j;
        put_code(out.w, r * words_out, c, affine_code(f[j], f_min, div, 3.0f, "requantize_2bit", r, c), 2);
      }
      out.scales[r * groups + g] = f32_to_bf16_trunc(s2);
      out.biases[r * groups + g] = f32_to_bf16_trunc(f_min);
    }
  }
  return out;
}

}  // namespace moe
