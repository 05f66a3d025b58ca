#include <cmath>
#include <vector>

#include "core/math.h"
#include "ops/matvec_q.h"
#include "ops/swiglu_expert.h"

namespace moe {

void swiglu_expert_validate_weights(const SwigluExpertParams& p, const ExpertWeights& e, std::string_view op,
                                    std::string_view what) {
  MOE_CHECK(p.hidden > 0 && p.inter > 0,
            op << ": hidden=" << p.hidden << " inter=" << p.inter << ", expected both > 0");
  const QuantMatrix* mats[3] = {&e.gate, &e.up, &e.down};
  const char* names[3] = {"gate", "up", "down"};
  const int64_t rows[3] = {p.inter, p.inter, p.hidden};
  const int64_t cols[3] = {p.hidden, p.hidden, p.inter};
  for (int i = 0; i < 3; ++i) {
    const std::string name = std::string(what) + names[i];
    const QuantMatrix& m = *mats[i];
    MOE_CHECK(m.rows == rows[i] && m.cols == cols[i] && m.bits == p.bits,
              op << ": " << name << " is [" << m.rows << ", " << m.cols << "] bits=" << m.bits << ", expected ["
                 << rows[i] << ", " << cols[i] << "] bits=" << p.bits);
    check_quant(m, op, name);
  }
}

void swiglu_expert_validate(const SwigluExpertParams& p, const ExpertWeights& e, std::span<const float> x,
                            std::span<float> y) {
  MOE_CHECK(p.tokens >= 0, "swiglu_expert: tokens=" << p.tokens << ", expected >= 0");
  swiglu_expert_validate_weights(p, e, "swiglu_expert", "");
  check_size(x, p.tokens * p.hidden, "swiglu_expert", "x");
  check_size(y, p.tokens * p.hidden, "swiglu_expert", "y");
}

template <class Acc>
void swiglu_expert_ref(const SwigluExpertParams& p, const ExpertWeights& e, std::span<const float> x,
                       std::span<float> y) {
  swiglu_expert_validate(p, e, x, y);
  std::vector<float> g(p.inter), u(p.inter), h(p.inter);
  for (int64_t t = 0; t < p.tokens; ++t) {
    const std::span<const float> xt = x.subspan(t * p.hidden, p.hidden);
    matvec_q_ref<Acc>(quant_params(e.gate), e.gate, xt, g);
    matvec_q_ref<Acc>(quant_params(e.up), e.up, xt, u);
    // The engines' form: (g / (1 + exp(-g))) * u, every step rounded in Acc; h stored as f32.
    for (int64_t i = 0; i < p.inter; ++i) h[i] = float(silu(Acc(g[i])) * Acc(u[i]));
    matvec_q_ref<Acc>(quant_params(e.down), e.down, h, y.subspan(t * p.hidden, p.hidden));
  }
}

template void swiglu_expert_ref<float>(const SwigluExpertParams&, const ExpertWeights&, std::span<const float>,
                                       std::span<float>);
template void swiglu_expert_ref<double>(const SwigluExpertParams&, const ExpertWeights&, std::span<const float>,
                                        std::span<float>);

}  // namespace moe
