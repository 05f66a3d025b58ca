#include "spec/quant_dot_spec.h"

#include <algorithm>
#include <cmath>

#include "core/test_data.h"

namespace moe {

QuantDotInputs quant_dot_inputs(const MatmulQParams& p, uint64_t seed, bool exact) {
  Rng rng(seed);
  if (exact) return {exact_quant_weights(rng.fork(1), p.rows, p.bits), exact_quant_inputs(rng.fork(2), p.tokens)};
  return {random_quant(rng.fork(1), p.rows, p.cols, p.bits, p.group_size), rng.fork(2).activations(p.tokens * p.cols)};
}

QuantStorage exact_quant_weights(Rng rng, int64_t rows, int bits) {
  QuantStorage W = random_quant(rng, rows, kExactCols, bits, 64);
  for (size_t g = 0; g < W.scales.size(); ++g) W.scales[g] = bf16(g % 2 == 0 ? 0x3F81u : 0x3F80u);  // 1 + 2^-7, 1
  for (auto& bi : W.biases) bi = f32_to_bf16_rne(0.0f);
  return W;
}

std::vector<float> exact_quant_inputs(Rng rng, int64_t tokens) {
  std::vector<float> x(static_cast<size_t>(tokens * kExactCols), 0.0f);
  for (int64_t t = 0; t < tokens; ++t)
    x[size_t(t * kExactCols + 64 * (1 + 2 * int64_t(rng.below(2))) + int64_t(rng.below(64)))] = 1.0f;
  return x;
}

namespace {

// quant_row_sums for one setting of weight_rounded_once (a template, so that the loop carries
// only the sums it needs).
template <bool kRoundedOnce>
void row_sums(const QuantMatrix& W, const double* v, double* exact, double* mag) {
  const int64_t groups = W.groups_per_row(), vpw = W.values_per_word(), wpg = W.group_size / vpw;
  const uint32_t mask = (1u << W.bits) - 1u;
  for (int64_t r = 0; r < W.rows; ++r) {
    const uint32_t* wr = W.w + r * W.words_per_row();
    double acc = 0, a = 0;
    for (int64_t g = 0; g < groups; ++g) {
      const double s = bf16_to_f32(W.scales[r * groups + g]), b = bf16_to_f32(W.biases[r * groups + g]);
      double sum_qv = 0, sum_v = 0, sum_wv = 0;  // sum q |v|, sum |v|, sum |W v| over the group
      for (int64_t wi = g * wpg; wi < (g + 1) * wpg; ++wi) {
        const double* vw = v + wi * vpw;
        for (int64_t k = 0; k < vpw; ++k) {
          const double q = double((wr[wi] >> (k * W.bits)) & mask);
          const double wv = (q * s + b) * vw[k];
          acc += wv;
          if constexpr (kRoundedOnce) {
            sum_wv += std::fabs(wv);
          } else {
            const double av = std::fabs(vw[k]);
            sum_qv += q * av, sum_v += av;
          }
        }
      }
      a += kRoundedOnce ? sum_wv : std::fabs(s) * sum_qv + std::fabs(b) * sum_v;
    }
    if (exact) exact[r] = acc;
    if (mag) mag[r] = a;
  }
}

}  // namespace

void quant_row_sums(const QuantMatrix& W, const double* v, double* exact, double* mag, bool weight_rounded_once) {
  if (weight_rounded_once) return row_sums<true>(W, v, exact, mag);
  row_sums<false>(W, v, exact, mag);
}

std::vector<double> quant_dot_bound(const QuantMatrix& W, std::span<const float> x, std::span<const float> truth,
                                    const PrecisionModel& m) {
  const int64_t rows = W.rows, cols = W.cols, tokens = int64_t(x.size()) / cols, blocks = (rows + 255) / 256;
  const double g = m.sum(double(cols + 1)) + gamma_n(double(cols + 1), 0x1.0p-53);
  const std::vector<double> xd(x.begin(), x.end());
  std::vector<double> bound(truth.size());
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t b = 0; b < blocks; ++b) {  // the timing shapes (a 248320-row lm_head) on every core
    const int64_t r0 = b * 256, n = std::min<int64_t>(256, rows - r0);
    std::vector<double> mag(static_cast<size_t>(n));
    for (int64_t t = 0; t < tokens; ++t) {
      quant_row_sums(W.row_block(r0, n), xd.data() + t * cols, nullptr, mag.data(), m.quant_weight_rounded_once);
      for (int64_t i = 0; i < n; ++i) {
        const size_t j = size_t(t * rows + r0 + i);
        bound[j] = g * mag[size_t(i)] + m.u * std::fabs(double(truth[j])) + double(cols + 2) * kMinNormal32;
      }
    }
  }
  return bound;
}

}  // namespace moe
