// GCC 12 reports a false -Wmaybe-uninitialized inside Eigen's AVX-512 exp.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <Eigen/Core>

#include "ops/decay_beta.h"

namespace moe {

// One token (Hv heads) per Eigen array expression, with the stable softplus
// max(u, 0) + log1p(exp(-|u|)) (accurate over the whole range, unlike the engines' form).
// Results go to local arrays first and are then copied: Eigen's scalar peel for an unaligned
// destination uses std::exp where the packet loop uses its own, so writing in place would let
// the bits depend on the buffer's address. The work is tiny (Hv <= 64 per token): no threads.
void decay_beta_fast(const DecayBetaParams& p, std::span<const float> a, std::span<const float> b,
                     std::span<const float> A_log, std::span<const float> dt_bias, std::span<float> g,
                     std::span<float> beta) {
  decay_beta_validate(p, a, b, A_log, dt_bias, g, beta);
  const int64_t H = p.heads;
  using CVec = Eigen::Map<const Eigen::ArrayXf>;
  using Vec = Eigen::Map<Eigen::ArrayXf>;
  const Eigen::ArrayXf A = CVec(A_log.data(), H).exp();
  const Eigen::ArrayXf dtb = CVec(dt_bias.data(), H);
  Eigen::ArrayXf u(H), sp(H), gt(H), bt(H);
  for (int64_t t = 0; t < p.tokens; ++t) {
    u = CVec(a.data() + t * H, H) + dtb;
    // (u > 0).select keeps NaN out of the first term, but abs/exp/log1p carry it into sp.
    sp = (u > 0.0f).select(u, 0.0f) + (-u.abs()).exp().log1p();
    gt = (-(A * sp)).exp();
    bt = 1.0f / (1.0f + (-CVec(b.data() + t * H, H)).exp());
    Vec(g.data() + t * H, H) = gt;
    Vec(beta.data() + t * H, H) = bt;
  }
}

}  // namespace moe
