#include "spec/conv1d_step_spec.h"

#include <cmath>
#include <string>

#include "core/rng.h"

namespace moe {

std::vector<Conv1dStepShape> conv1d_step_shapes(bool remainders, bool real) {
  std::vector<Conv1dStepShape> out;
  auto add = [&](std::string label, int64_t T, int64_t C, int64_t K, uint64_t offset, Conv1dStepVariant v) {
    out.push_back({std::move(label), Conv1dStepParams{T, C, K}, offset, v});
  };
  const Conv1dStepVariant decode{true}, prefill{};
  if (remainders) {
    for (int64_t C : {1, 33, 257, 4099})
      add("remainder channels " + std::to_string(C) + ", 16 steps", 16, C, 4, uint64_t(C), decode);
    add("kernel 2, 16 steps", 16, 67, 2, 1, decode);
    add("kernel 1 (no state), 3 steps", 3, 31, 1, 2, decode);
    add("kernel 7, 16 steps", 16, 33, 7, 3, decode);
    // K = KMAX: the window and tap arrays full (an array sized KMAX - 1, or a tap loop running to
    // j <= K, indexes past them).
    add("kernel 8 (KMAX), 16 steps", 16, 33, 8, 8, decode);
    add("|acc| up to ~200 (silu exp overflow), 4 steps", 4, 1031, 4, 4, {true, false, 40.0f});
    add("remainder prefill 17 tokens, channels 67", 17, 67, 4, 5, prefill);
    add("remainder channels 16411, 4 steps", 4, 16411, 4, 6, decode);
    add("remainder prefill 5 tokens, channels 16411", 5, 16411, 4, 7, prefill);
    for (int64_t C : {1, 31, 33, 67, 4099}) add("remainder channels " + std::to_string(C), 3, C, 4, uint64_t(C), prefill);
    add("kernel 2", 5, 33, 2, 1, prefill);
    add("kernel 1 (no state)", 2, 31, 1, 2, prefill);
    add("|acc| up to ~200 (silu exp overflow)", 4, 1031, 4, 3, {false, false, 40.0f});
  }
  if (real) {
    add("A17B 16 decode steps", 16, 12288, 4, 10, decode);
    add("A3B 16 decode steps from sequence start", 16, 8192, 4, 11, {true, true});
    add("A17B prefill 64 tokens", 64, 12288, 4, 12, prefill);
    add("A3B prefill 16 tokens", 16, 8192, 4, 13, prefill);
    add("A17B decode", 1, 12288, 4, 10, prefill);
    add("A17B 16 tokens", 16, 12288, 4, 11, prefill);
    add("A3B 16 tokens", 16, 8192, 4, 12, prefill);
  }
  return out;
}

Conv1dStepInputs conv1d_step_inputs(const Conv1dStepParams& p, uint64_t seed, const Conv1dStepVariant& v) {
  const int64_t T = p.tokens, C = p.channels, K = p.kernel;
  Rng rng(seed);
  Conv1dStepInputs in;
  in.x = rng.fork(1).activations(T * C);
  in.state0 = v.zero_state ? std::vector<float>(size_t((K - 1) * C), 0.0f) : rng.fork(2).activations((K - 1) * C);
  for (float& e : in.x) e *= v.x_scale;
  for (float& e : in.state0) e *= v.x_scale;
  in.wb = rng.fork(3).bf16_normal_vec(C * K, 0.3);
  for (bf16 b : in.wb) in.w.push_back(bf16_to_f32(b));
  return in;
}

std::vector<double> conv1d_step_bound(const Conv1dStepParams& p, std::span<const float> x, std::span<const float> w,
                                      std::span<const float> state0, std::span<const float> y,
                                      const PrecisionModel& m) {
  const int64_t T = p.tokens, C = p.channels, K = p.kernel;
  const double gk = m.sum(double(K));
  std::vector<float> hist(state0.begin(), state0.end());
  std::vector<double> bound(static_cast<size_t>(T * C));
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t c = 0; c < C; ++c) {
      const double xw = double(x[size_t(t * C + c)]) * double(w[size_t(c * K + K - 1)]);
      double sum_abs = std::fabs(xw), acc = xw;
      for (int64_t j = 0; j + 1 < K; ++j) {
        const double term = double(hist[size_t(j * C + c)]) * double(w[size_t(c * K + j)]);
        sum_abs += std::fabs(term), acc += term;
      }
      const double dacc = gk * sum_abs, a = std::fabs(acc) + dacc;
      const double one_minus_sig = 1.0 / (1.0 + std::exp(acc - dacc));  // 1 - sigmoid, at its largest
      const double yt = std::fabs(double(y[size_t(t * C + c)]));
      bound[size_t(t * C + c)] =
          1.1 * dacc + (m.exp_rel(a) * one_minus_sig + m.division_rel + 2 * m.u) * yt + 0x1.0p-119;
      for (int64_t j = 0; j + 2 < K; ++j) hist[size_t(j * C + c)] = hist[size_t((j + 1) * C + c)];
      if (K > 1) hist[size_t((K - 2) * C + c)] = x[size_t(t * C + c)];
    }
  }
  return bound;
}

}  // namespace moe
