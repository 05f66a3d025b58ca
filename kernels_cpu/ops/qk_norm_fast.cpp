#include <Eigen/Core>
#include <cmath>

#include "ops/qk_norm.h"

namespace moe {

// Eigen's vectorised sum of squares per head; the two scales are folded into one factor per
// head (inv * scale), which qk_norm_bound (spec/qk_norm_spec.h) covers. Heads spread over threads
// only from 2^18 elements (~0.3 ms of single-thread work, a 256-token prefill): below that the
// fork/join costs more than it saves; a decode step (16 heads of 128) stays on one thread.
void qk_norm_fast(const QkNormParams& p, std::span<const float> q, std::span<const float> k, std::span<float> q_out,
                  std::span<float> k_out) {
  qk_norm_validate(p, q, k, q_out, k_out);
  const int64_t dk = p.head_dim, rows = p.tokens * p.heads;
  // Plain variables, not a structured binding: clang 14 cannot capture one into the OpenMP region.
  const std::pair<float, float> factors = qk_norm_factors<float>(p);
  const float q_scale = factors.first, k_scale = factors.second;
  using In = Eigen::Map<const Eigen::ArrayXf>;
  using Out = Eigen::Map<Eigen::ArrayXf>;
#pragma omp parallel for schedule(static) if (rows * dk >= (1 << 18))
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t off = r * dk;
    In qr(q.data() + off, dk), kr(k.data() + off, dk);
    const float q_inv = qk_norm_inv<float>(p, qr.square().sum());
    const float k_inv = qk_norm_inv<float>(p, kr.square().sum());
    Out(q_out.data() + off, dk) = qr * (q_inv * q_scale);
    Out(k_out.data() + off, dk) = kr * (k_inv * k_scale);
  }
}

}  // namespace moe
