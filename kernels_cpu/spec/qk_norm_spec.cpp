#include "spec/qk_norm_spec.h"

#include <algorithm>

#include "core/rng.h"
#include "spec/norm_bound.h"

namespace moe {

QkNormInputs qk_norm_inputs(const QkNormParams& p, uint64_t seed) {
  Rng rng(seed);
  const int64_t n = p.tokens * p.heads * p.head_dim;
  QkNormInputs in{rng.fork(1).activations(n), rng.fork(2).activations(n)};
  shrink_every_fifth_head(in.q, p.tokens * p.heads, p.head_dim);
  shrink_every_fifth_head(in.k, p.tokens * p.heads, p.head_dim);
  return in;
}

std::vector<QkNormShape> qk_norm_shapes(bool remainders, bool real) {
  std::vector<QkNormShape> out;
  if (remainders) {
    add_head_norm_remainders(out, "dk");
    // More than 512 heads x tokens: engines that give a row a workgroup split rows over x and y
    // (ggml's l2_norm: row = y 512 + x), in whole rows of 512 and with a partial last one.
    out.push_back({"remainder 16 tokens x 64 heads dk 16", QkNormParams{16, 64, 16, 1e-6f}, 7});
    out.push_back({"remainder 9 tokens x 64 heads dk 16", QkNormParams{9, 64, 16, 1e-6f}, 8});
  }
  if (real) {
    out.push_back({"A17B/A3B decode", QkNormParams{1, 16, 128, 1e-6f}, 0});
    out.push_back({"A17B/A3B prefill 64", QkNormParams{64, 16, 128, 1e-6f}, 1});
    out.push_back({"A17B/A3B prefill 128 tokens", QkNormParams{128, 16, 128, 1e-6f}, 2, true});
  }
  return out;
}

double qk_norm_inv_rel(const QkNormParams& p, const PrecisionModel& m) {
  const double n = double(p.head_dim);
  switch (p.eps_form) {
    case 1: return (m.sum(n) + m.u) / 2 + std::max(m.rsqrt_rel, m.sqrt_rel + m.division_rel);
    case 2: return m.sum(n) / 2 + m.sqrt_rel + m.division_rel;
    default: return norm_inv_rel(n, m);
  }
}

QkNormBounds qk_norm_bound(const QkNormParams& p, std::span<const float> q_truth, std::span<const float> k_truth,
                           const PrecisionModel& m) {
  const double inv = qk_norm_inv_rel(p, m);
  if (!p.scaled) return {relative_bound(q_truth, inv + 2 * m.u), relative_bound(k_truth, inv + 2 * m.u)};
  if (p.eps_form != 0)
    return {relative_bound(q_truth, inv + m.rsqrt_rel + 3 * m.u), relative_bound(k_truth, inv + 2 * m.u)};
  const double q_scale = std::max(2 * m.rsqrt_rel + m.u, m.division_rel);
  return {relative_bound(q_truth, inv + q_scale + 3 * m.u), relative_bound(k_truth, inv + m.rsqrt_rel + 3 * m.u)};
}

}  // namespace moe
