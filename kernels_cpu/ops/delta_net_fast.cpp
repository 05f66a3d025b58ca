// GCC 12 reports a false -Wmaybe-uninitialized inside Eigen's AVX-512 kernels.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <Eigen/Core>
#include <cmath>

#include "ops/delta_net.h"

namespace moe {

// Per v-head, on Eigen: kv_mem = g (S k) (matrix-vector product on the state as stored),
// delta = (v - kv_mem) beta, S = g S + delta k^T (decay and rank-1 update in one lazy pass over
// S), o = S q (matrix-vector product) times out_scale. Under decay_log g is std::exp of the
// input; head_group picks the q/k head (delta_net_qk_head). v-heads are independent across all
// tokens, so OpenMP threads take whole heads and run every token on them.
// Each head's state, and each token's q/k/v, are first copied into local aligned Eigen objects:
// Eigen's reductions and assignments peel unaligned heads with scalar code, so working in the
// caller's buffers would let the bits depend on their addresses, and a T-token call would not
// equal T one-token calls bit-for-bit.
void delta_net_fast(const DeltaNetParams& p, std::span<const float> q, std::span<const float> k,
                    std::span<const float> v, std::span<const float> g, std::span<const float> beta,
                    std::span<float> state, std::span<float> o) {
  delta_net_validate(p, q, k, v, g, beta, state, o);
  const int64_t T = p.tokens, Hk = p.k_heads, Hv = p.v_heads, dk = p.key_dim, dv = p.value_dim;
  using Mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using CVec = Eigen::Map<const Eigen::VectorXf>;
  // Threads pay off once a call touches more than a few heads' states (dv*dk floats each).
#pragma omp parallel for schedule(static) if (T * Hv * dv * dk >= (1 << 16))
  for (int64_t h = 0; h < Hv; ++h) {
    Mat S = Eigen::Map<Mat>(state.data() + h * dv * dk, dv, dk);
    Eigen::VectorXf qh(dk), kh(dk), vh(dv), kv(dv), delta(dv), oh(dv);
    const int64_t hk = delta_net_qk_head(p, h);
    for (int64_t t = 0; t < T; ++t) {
      qh = CVec(q.data() + (t * Hk + hk) * dk, dk);
      kh = CVec(k.data() + (t * Hk + hk) * dk, dk);
      vh = CVec(v.data() + (t * Hv + h) * dv, dv);
      const float gh = p.decay_log ? std::exp(g[t * Hv + h]) : g[t * Hv + h], bh = beta[t * Hv + h];
      kv.noalias() = S * kh;
      kv *= gh;  // (g S) k as g (S k): the decay is folded into the product
      delta = (vh - kv) * bh;
      S = gh * S + delta.lazyProduct(kh.transpose());
      oh.noalias() = S * qh;
      oh *= p.out_scale;  // exact when out_scale is 1
      Eigen::Map<Eigen::VectorXf>(o.data() + (t * Hv + h) * dv, dv) = oh;
    }
    Eigen::Map<Mat>(state.data() + h * dv * dk, dv, dk) = S;
  }
}

}  // namespace moe
