#include "spec/softmax_spec.h"

#include <cmath>
#include <limits>
#include <string>

#include "core/check_util.h"
#include "core/rng.h"
#include "spec/attention_bound.h"

namespace moe {

SoftmaxInputs softmax_inputs(const SoftmaxParams& p, uint64_t seed, const SoftmaxVariant& v) {
  Rng rng(seed);
  SoftmaxInputs in;
  in.x = rng.fork(1).normal_vec(p.rows * p.cols, 16.0);
  const int64_t past = p.cols - p.mask_rows;  // Causal: mask_rows = tokens
  const float inf = std::numeric_limits<float>::infinity();
  in.mask.assign(size_t(p.mask_rows * p.cols), 0.0f);
  Rng r = rng.fork(2);
  for (int64_t t = 0; t < p.mask_rows; ++t)
    for (int64_t c = 0; c < p.cols; ++c) {
      float& m = in.mask[size_t(t * p.cols + c)];
      if (v.mask == SoftmaxMask::Bias) m = float(r.below(129) - 64) / 8.0f;
      if (v.mask == SoftmaxMask::FarNegative) m = -200.0f + float(r.below(129) - 64) / 8.0f;
      if (v.mask == SoftmaxMask::Causal || v.mask == SoftmaxMask::CausalFullRow) m = c > past + t ? -inf : 0.0f;
      if (v.mask == SoftmaxMask::CausalFullRow && t == 0) m = -inf;
    }
  return in;
}

std::vector<SpecShape<SoftmaxParams, SoftmaxVariant>> softmax_shapes(bool remainders, bool real) {
  std::vector<SpecShape<SoftmaxParams, SoftmaxVariant>> out;
  auto add = [&](std::string label, int64_t rows, int64_t cols, int64_t mask_rows, float scale, SoftmaxMask mask,
                 uint64_t offset) {
    out.push_back({std::move(label), SoftmaxParams{rows, cols, mask_rows, scale}, offset, SoftmaxVariant{mask}});
  };
  using M = SoftmaxMask;
  if (remainders) {
    add("cols 1", 5, 1, 0, 0.125f, M::None, 1);
    for (int64_t c : {3, 31, 33, 67, 257, 4099})
      add("remainder cols " + std::to_string(c), 3, c, 0, 0.125f, M::None, uint64_t(c));
    add("causal prefill 7 tokens after 5, 4 heads", 4 * 7, 12, 7, 0.0625f, M::Causal, 12);
    add("causal prefill 33 tokens, 3 heads", 3 * 33, 33, 33, 0.0625f, M::Causal, 13);
    // 600 rows: past 512, engines that give a row a workgroup split rows over x and y, and the
    // last row of 512 is partial (ggml's soft_max guards it).
    add("causal prefill 150 tokens, 4 heads", 4 * 150, 150, 150, 0.0625f, M::Causal, 21);
    add("decode cols 300, 16 heads, zero mask", 16, 300, 1, 0.0625f, M::Zero, 14);
    // Masked rows past 16 blocks of a 32-lane subgroup and of 512 invocations: engines that keep
    // the first blocks of a row in registers read the mask again for the rest.
    add("causal prefill 4 tokens after 600, 2 heads", 2 * 4, 604, 4, 0.0625f, M::Causal, 22);
    add("decode cols 8300, 2 heads, finite biases", 2, 8300, 1, 0.125f, M::Bias, 23);
    // 1,024 rows: a row stride of 511 workgroups would leave the last row of 2 x 512 unwritten.
    add("causal prefill 256 tokens, 4 heads", 4 * 256, 256, 256, 0.0625f, M::Causal, 24);
    // Every score near -200 (a mask of -200 +- 8): exp without the row's max shift, or with a
    // shift by anything but the max (0, say), underflows the whole row to 0.
    add("decode cols 301, 2 heads, mask -200 +- 8", 2, 301, 1, 0.0625f, M::FarNegative, 25);
    add("finite biases cols 67, 2 heads x 3 rows", 6, 67, 3, 0.5f, M::Bias, 15);
    add("scale -64 cols 257", 3, 257, 0, -64.0f, M::None, 16);
    add("scale 30 cols 257 finite biases", 3, 257, 1, 30.0f, M::Bias, 17);
    add("fully masked row: causal 3 tokens after 6, 2 heads", 2 * 3, 9, 3, 0.0625f, M::CausalFullRow, 18);
    add("long context cols 32771", 2, 32771, 0, 0.0625f, M::None, 19);
    // Rows of 3 and 17 blocks where a block is a subgroup of 8 (20, 130) or 32 (520) lanes or
    // 512 invocations (1100, 8200): the steps of an unrolled block ladder (ggml's soft_max).
    for (int64_t c : {20, 130, 520, 1100, 8200})
      add("ladder cols " + std::to_string(c), 3, c, 0, 0.125f, M::None, uint64_t(20 + c));
    // And the last row length of a step (8, 16 and 32 blocks of 8, 32 or 512).
    for (int64_t c : {64, 128, 256, 512, 1024, 4096, 16384})
      add("ladder cols " + std::to_string(c), 2, c, 0, 0.125f, M::None, uint64_t(20 + c));
  }
  if (real) {
    add("A17B decode over 4096", 32, 4096, 1, 0.0625f, M::Zero, 0);
    add("A17B prefill 64 tokens", 32 * 64, 64, 64, 0.0625f, M::Causal, 1);
    add("A3B prefill 32 tokens after 1000", 16 * 32, 1032, 32, 0.0625f, M::Causal, 2);
    add("DeepSeek-V3 decode over 32768, 128 heads", 128, 32768, 1, 0.0721688f, M::Zero, 3);
  }
  return out;
}

std::vector<double> softmax_bound(const SoftmaxParams& p, std::span<const float> x, std::span<const float> mask,
                                  const PrecisionModel& m) {
  const int64_t C = p.cols;
  std::vector<double> bound(size_t(p.rows * C), 0.0);
  std::vector<double> z(static_cast<size_t>(C));
  std::vector<int64_t> live;
  for (int64_t r = 0; r < p.rows; ++r) {
    const float* mr = p.mask_rows > 0 ? mask.data() + (r % p.mask_rows) * C : nullptr;
    live.clear();
    double A = 0, XS = 0;
    for (int64_t c = 0; c < C; ++c) {
      const double xs = double(x[size_t(r * C + c)]) * double(p.scale);
      z[size_t(c)] = xs + (mr ? double(mr[c]) : 0.0);
      if (z[size_t(c)] == -std::numeric_limits<double>::infinity()) continue;
      live.push_back(c);
      A = std::max(A, std::fabs(z[size_t(c)])), XS = std::max(XS, std::fabs(xs));
    }
    if (live.empty()) continue;  // NaN throughout: met by NaN only
    Eigen::VectorXd s(int64_t(live.size()));
    for (size_t i = 0; i < live.size(); ++i) s(int64_t(i)) = z[size_t(live[i])];
    const double Ds = m.u * (XS + A);
    const SoftmaxRowBound b = softmax_row_bound(s, exponent_error(Ds, A, false, false, m), 0, m);
    const double len = double(live.size());
    for (size_t i = 0; i < live.size(); ++i) {
      const double P = b.P(int64_t(i));
      bound[size_t(r * C + live[i])] = P * b.eta(int64_t(i)) + kU32 * P + kMinNormal32 * (2 + P * len);
    }
  }
  return bound;
}

}  // namespace moe
