#include <cmath>
#include <vector>

#include "ops/matvec_q.h"
#include "ops/swiglu_expert.h"

namespace moe {

// matvec_q_fast (threaded over rows) for the three projections of each token; the SwiGLU
// product is a plain vectorisable loop.
void swiglu_expert_fast(const SwigluExpertParams& p, const ExpertWeights& e, std::span<const float> x,
                        std::span<float> y) {
  swiglu_expert_validate(p, e, x, y);
  const MatvecQParams pg = quant_params(e.gate);
  const MatvecQParams pu = quant_params(e.up);
  const MatvecQParams pd = quant_params(e.down);
  std::vector<float> g(p.inter), u(p.inter), h(p.inter);
  for (int64_t t = 0; t < p.tokens; ++t) {
    const std::span<const float> xt = x.subspan(t * p.hidden, p.hidden);
    matvec_q_fast(pg, e.gate, xt, g);
    matvec_q_fast(pu, e.up, xt, u);
    for (int64_t i = 0; i < p.inter; ++i) h[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
    matvec_q_fast(pd, e.down, h, y.subspan(t * p.hidden, p.hidden));
  }
}

}  // namespace moe
