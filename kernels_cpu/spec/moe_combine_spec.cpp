#include "spec/moe_combine_spec.h"

#include <cmath>

#include "core/math.h"
#include "core/rng.h"

namespace moe {

MoeCombineInputs moe_combine_inputs(const MoeCombineParams& p, uint64_t seed) {
  const int64_t T = p.tokens, d = p.dim, K = p.k;
  Rng rng(seed);
  MoeCombineInputs in;
  in.h = rng.fork(1).activations(T * d);
  in.e = rng.fork(2).normal_vec(T * K * d, 1.0);
  in.sh = rng.fork(3).normal_vec(T * d, 1.0);
  in.gamma = rng.fork(4).normal_vec(T, 2.0);
  in.w = rng.fork(5).uniform_vec(T * K, 0.01f, 1.0f);
  for (int64_t t = 0; t < T; ++t) {
    float s = 0;
    for (int64_t j = 0; j < K; ++j) s += in.w[size_t(t * K + j)];
    for (int64_t j = 0; j < K; ++j) in.w[size_t(t * K + j)] /= s;
  }
  return in;
}

std::vector<SpecShape<MoeCombineParams>> moe_combine_shapes(bool remainders, bool real) {
  std::vector<SpecShape<MoeCombineParams>> out;
  auto add = [&](std::string label, int64_t T, int64_t dim, int64_t K, bool gated, uint64_t offset) {
    out.push_back({std::move(label), MoeCombineParams{T, dim, K, gated}, offset});
  };
  if (remainders) {
    for (int64_t dim : {1, 31, 33, 67, 257, 4099}) {
      const std::string d = "remainder dim " + std::to_string(dim);
      add(d + " K 1", 3, dim, 1, true, uint64_t(dim));
      add(d + " K 3", 3, dim, 3, true, uint64_t(dim) + 1);
      add(d + " K 3 ungated", 3, dim, 3, false, uint64_t(dim) + 2);
    }
    add("no routed experts (K 0)", 2, 33, 0, true, 3);
    add("remainder T 1 dim 257 K 17", 1, 257, 17, true, 17);
    add("remainder T 1 dim 67 K 33 ungated", 1, 67, 33, false, 33);
    add("remainder T 1 dim 8257 K 10", 1, 8257, 10, true, 8257);
    // K 8 (the top-k decode kernels compile in) at a dim no workgroup width divides.
    add("remainder T 1 dim 4099 K 8", 1, 4099, 8, true, 4099);
    add("remainder T 1 dim 16411 K 10", 1, 16411, 10, true, 16411);
    // K 4, the count decode engines fix at compile time, at a dim no workgroup width divides.
    add("remainder T 1 dim 4099 K 4", 1, 4099, 4, true, 4099 + 4);
  }
  if (real) {
    add("A17B K 10", 1, 4096, 10, true, 0);
    add("A17B engine K 4", 1, 4096, 4, true, 1);
    add("A3B K 8", 1, 2048, 8, true, 2);
    add("Metal capacity K 16", 1, 2048, 16, true, 3);
    add("A3B prefill 64 tokens K 8", 64, 2048, 8, true, 4);
    add("DeepSeek-V3 ungated K 8", 1, 7168, 8, false, 5);
  }
  return out;
}

std::vector<double> moe_combine_bound(const MoeCombineParams& p, std::span<const float> h, std::span<const float> e,
                                      std::span<const float> w, std::span<const float> sh,
                                      std::span<const float> gamma, std::span<const float> truth,
                                      const PrecisionModel& m) {
  const int64_t T = p.tokens, d = p.dim, K = p.k;
  const double g = m.sum(double(K + 2));
  std::vector<double> bound(size_t(T * d));
  for (int64_t t = 0; t < T; ++t) {
    const double gt = p.gated ? double(gamma[size_t(t)]) : 0.0;
    const double sig = p.gated ? sigmoid(gt) : 1.0;
    const double sig_rel = p.gated ? m.exp_rel(gt) + m.division_rel + 2 * m.u : 0.0;
    for (int64_t i = 0; i < d; ++i) {
      double terms = std::fabs(double(h[size_t(t * d + i)]));
      for (int64_t j = 0; j < K; ++j)
        terms += std::fabs(double(w[size_t(t * K + j)]) * double(e[size_t((t * K + j) * d + i)]));
      const double shg = std::fabs(double(sh[size_t(t * d + i)]) * sig);
      bound[size_t(t * d + i)] =
          g * (terms + shg) + sig_rel * shg + m.u * std::fabs(double(truth[size_t(t * d + i)])) + kMinNormal32;
    }
  }
  return bound;
}

}  // namespace moe
