#include "spec/matvec_bf16_spec.h"

#include <cmath>
#include <string>

#include "core/rng.h"

namespace moe {

MatvecBf16Inputs matvec_bf16_inputs(const MatvecBf16Params& p, uint64_t seed) {
  Rng rng(seed);
  MatvecBf16Inputs in;
  in.W = rng.fork(1).bf16_normal_vec(p.rows * p.cols, 1.0 / std::sqrt(double(p.cols)));
  in.x = rng.fork(2).activations(p.cols);
  return in;
}

std::vector<MatvecBf16Shape> matvec_bf16_shapes(bool remainders, bool real) {
  std::vector<MatvecBf16Shape> out;
  auto add = [&](int64_t rows, int64_t cols, bool gpu = true) {
    out.push_back({"remainder " + std::to_string(rows) + "x" + std::to_string(cols), MatvecBf16Params{rows, cols},
                   uint64_t(rows * 10007 + cols), MatvecBf16Variant{gpu}});
  };
  if (remainders) {
    // 63 = 7 x 9 is odd but a multiple of 7 and 9: a wrong octet test.
    for (int64_t cols : {1, 17, 33, 63, 67, 4099})
      for (int64_t rows : {1, 3, 33}) add(rows, cols);
    // Past the 8192-float input caches engines size for: 8192 + 65 and 16384 + 27 columns (odd:
    // rows start in a word's high half), and 16384 + 8 (whole octets, a kernel's vector path, in
    // more than one step). Few rows, so cheap.
    for (int64_t cols : {8257, 16411, 16392}) add(3, cols);
    // Whole octets (cols % 8 == 0, every real shape): one octet, fewer octets than a workgroup's
    // lanes, and 2^k + 1 octets (one lane's step past the rest).
    for (int64_t cols : {8, 64, 2056, 4104})
      for (int64_t rows : {1, 3, 33}) add(rows, cols);
    // Row counts a few past a multiple of 1024 and of 8: kernels that take several rows per
    // workgroup once rows are many (a last workgroup with 3 rows of its 4 or 8), with whole
    // octets and with odd columns.
    for (int64_t rows : {1027, 4099, 8195})
      for (int64_t cols : {8, 136, 17}) add(rows, cols);
    for (int64_t cols : {15, 16, 31})
      for (int64_t rows : {1, 3, 33}) add(rows, cols, false);
  }
  // The only bf16 matvec of the supported models (docs/ops/quantized.md "BF16 matvec"); A17B and
  // A3B quantize every projection (matvec_q, matmul_q).
  if (real) out.push_back({"DeepSeek-V3 router gate", MatvecBf16Params{256, 7168}, 0});
  return out;
}

std::vector<double> matvec_bf16_bound(const MatvecBf16Params& p, std::span<const bf16> W, std::span<const float> x,
                                      std::span<const float> truth, const PrecisionModel& m) {
  const int64_t rows = p.rows, cols = p.cols;
  const double g = m.sum(double(cols));
  std::vector<double> bound(static_cast<size_t>(rows));
#pragma omp parallel for schedule(dynamic, 256)
  for (int64_t r = 0; r < rows; ++r) {  // the timing shapes (a 248320-row lm_head) on every core
    double abs_sum = 0;
    for (int64_t c = 0; c < cols; ++c)
      abs_sum += std::fabs(double(bf16_to_f32(W[size_t(r * cols + c)])) * double(x[size_t(c)]));
    bound[size_t(r)] = g * abs_sum + m.u * std::fabs(double(truth[size_t(r)])) + kMinNormal32;
  }
  return bound;
}

}  // namespace moe
