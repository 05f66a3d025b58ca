#include <cmath>
#include <type_traits>

#include "core/math.h"
#include "ops/decay_beta.h"

namespace moe {

void decay_beta_validate(const DecayBetaParams& p, std::span<const float> a, std::span<const float> b,
                         std::span<const float> A_log, std::span<const float> dt_bias, std::span<float> g,
                         std::span<float> beta) {
  MOE_CHECK(p.tokens >= 0 && p.heads > 0,
            "decay_beta: tokens=" << p.tokens << " heads=" << p.heads << ", expected tokens >= 0, heads > 0");
  check_size(a, p.tokens * p.heads, "decay_beta", "a");
  check_size(b, p.tokens * p.heads, "decay_beta", "b");
  check_size(A_log, p.heads, "decay_beta", "A_log");
  check_size(dt_bias, p.heads, "decay_beta", "dt_bias");
  check_size(g, p.tokens * p.heads, "decay_beta", "g");
  check_size(beta, p.tokens * p.heads, "decay_beta", "beta");
  // Every input is read before the outputs of its (token, head) are written, so g may be a
  // and beta may be b exactly; any other overlap would feed outputs back as inputs.
  const auto disjoint = [](const float* p0, size_t n0, const float* p1, size_t n1) {
    return n0 == 0 || n1 == 0 || p0 + n0 <= p1 || p1 + n1 <= p0;
  };
  MOE_CHECK(disjoint(g.data(), g.size(), beta.data(), beta.size()),
            "decay_beta: g overlaps beta, expected separate buffers");
  MOE_CHECK(g.data() == a.data() || disjoint(g.data(), g.size(), a.data(), a.size()),
            "decay_beta: g overlaps a without being the same buffer");
  MOE_CHECK(beta.data() == b.data() || disjoint(beta.data(), beta.size(), b.data(), b.size()),
            "decay_beta: beta overlaps b without being the same buffer");
  MOE_CHECK(disjoint(g.data(), g.size(), b.data(), b.size()) && disjoint(beta.data(), beta.size(), a.data(), a.size()),
            "decay_beta: g overlaps b or beta overlaps a, expected separate buffers");
}

template <class Acc>
void decay_beta_ref(const DecayBetaParams& p, std::span<const float> a, std::span<const float> b,
                    std::span<const float> A_log, std::span<const float> dt_bias, std::span<float> g,
                    std::span<float> beta) {
  decay_beta_validate(p, a, b, A_log, dt_bias, g, beta);
  const int64_t H = p.heads;
  for (int64_t t = 0; t < p.tokens; ++t) {
    for (int64_t h = 0; h < H; ++h) {
      const int64_t i = t * H + h;
      const Acc u = Acc(a[i]) + Acc(dt_bias[h]);
      Acc sp;
      if constexpr (std::is_same_v<Acc, float>) {
        sp = softplus<float>(u);  // the engines' logf(1 + expf(u)): inf above 88.72, 0 below -16.6
      } else {
        // Stable: for u > 0, log(1 + e^u) = u + log1p(e^-u); the branch keeps NaN (both
        // comparisons false -> second branch -> log1p(exp(NaN)) = NaN).
        sp = u > 0 ? u + std::log1p(std::exp(-u)) : std::log1p(std::exp(u));
      }
      const Acc decay = std::exp(Acc(A_log[h])) * sp;
      const float bi = b[i];  // read before beta (which may be b) is written
      g[i] = float(std::exp(-decay));
      beta[i] = float(sigmoid<Acc>(Acc(bi)));
    }
  }
}

template void decay_beta_ref<float>(const DecayBetaParams&, std::span<const float>, std::span<const float>,
                                    std::span<const float>, std::span<const float>, std::span<float>,
                                    std::span<float>);
template void decay_beta_ref<double>(const DecayBetaParams&, std::span<const float>, std::span<const float>,
                                     std::span<const float>, std::span<const float>, std::span<float>,
                                     std::span<float>);

}  // namespace moe
