#include <cmath>
#include <type_traits>

#include "core/math.h"
#include "ops/conv1d_step.h"

namespace moe {

void conv1d_step_validate(const Conv1dStepParams& p, std::span<const float> x, std::span<const float> w,
                          std::span<float> state, std::span<float> y) {
  MOE_CHECK(p.tokens >= 0 && p.channels > 0 && p.kernel >= 1,
            "conv1d_step: tokens=" << p.tokens << " channels=" << p.channels << " kernel=" << p.kernel
                                   << ", expected tokens >= 0, channels > 0, kernel >= 1");
  check_size(x, p.tokens * p.channels, "conv1d_step", "x");
  check_size(w, p.channels * p.kernel, "conv1d_step", "w");
  check_size(state, (p.kernel - 1) * p.channels, "conv1d_step", "state");
  check_size(y, p.tokens * p.channels, "conv1d_step", "y");
  // y may alias x exactly (each element is read before it is written); neither may overlap
  // the state, which is rewritten while the tokens are processed.
  const auto disjoint = [](const float* a, size_t na, const float* b, size_t nb) {
    return na == 0 || nb == 0 || a + na <= b || b + nb <= a;
  };
  MOE_CHECK(disjoint(y.data(), y.size(), state.data(), state.size()),
            "conv1d_step: y overlaps state, expected separate buffers");
  MOE_CHECK(disjoint(x.data(), x.size(), state.data(), state.size()),
            "conv1d_step: x overlaps state, expected separate buffers");
  MOE_CHECK(disjoint(y.data(), y.size(), w.data(), w.size()), "conv1d_step: y overlaps w, expected separate buffers");
  MOE_CHECK(y.data() == x.data() || disjoint(y.data(), y.size(), x.data(), x.size()),
            "conv1d_step: y overlaps x without being the same buffer");
}

template <class Acc>
void conv1d_step_ref(const Conv1dStepParams& p, std::span<const float> x, std::span<const float> w,
                     std::span<float> state, std::span<float> y) {
  conv1d_step_validate(p, x, w, state, y);
  const int64_t C = p.channels, K = p.kernel;
  for (int64_t t = 0; t < p.tokens; ++t) {
    for (int64_t c = 0; c < C; ++c) {
      const float xc = x[t * C + c];  // read before y (which may be x) is written
      const float* wc = w.data() + c * K;
      // The engines fuse every tap (CPU-R fma chain from 0). In f64 the products of two f32
      // values are exact, so the truth's fma is just an f64 sum of exact products.
      Acc acc = 0;
      for (int64_t j = 0; j < K - 1; ++j) acc = std::fma(Acc(state[j * C + c]), Acc(wc[j]), acc);
      acc = std::fma(Acc(xc), Acc(wc[K - 1]), acc);
      for (int64_t j = 0; j + 1 < K - 1; ++j) state[j * C + c] = state[(j + 1) * C + c];
      if (K > 1) state[(K - 2) * C + c] = xc;
      y[t * C + c] = float(silu<Acc>(acc));
    }
  }
}

template void conv1d_step_ref<float>(const Conv1dStepParams&, std::span<const float>, std::span<const float>,
                                     std::span<float>, std::span<float>);
template void conv1d_step_ref<double>(const Conv1dStepParams&, std::span<const float>, std::span<const float>,
                                      std::span<float>, std::span<float>);

}  // namespace moe
