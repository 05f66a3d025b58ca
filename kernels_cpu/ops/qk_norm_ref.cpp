#include <cmath>
#include <cstdint>

#include "core/math.h"
#include "ops/qk_norm.h"

namespace moe {
void qk_norm_validate(const QkNormParams& p, std::span<const float> q, std::span<const float> k,
                      std::span<const float> q_out, std::span<const float> k_out) {
  const int64_t n = head_norm_elements("qk_norm", p.tokens, p.heads, p.head_dim, p.eps);
  check_size(q, n, "qk_norm", "q");
  check_size(k, n, "qk_norm", "k");
  check_size(q_out, n, "qk_norm", "q_out");
  check_size(k_out, n, "qk_norm", "k_out");
  MOE_CHECK(spans_same(q_out, q) || spans_disjoint(q_out, q),
            "qk_norm: q_out partially overlaps q, expected the same buffer or disjoint");
  MOE_CHECK(spans_same(k_out, k) || spans_disjoint(k_out, k),
            "qk_norm: k_out partially overlaps k, expected the same buffer or disjoint");
  MOE_CHECK(spans_disjoint(q_out, k) && spans_disjoint(k_out, q) && spans_disjoint(q_out, k_out),
            "qk_norm: q_out or k_out overlaps the other head tensor, expected q_out on q (or disjoint) and k_out "
            "on k (or disjoint)");
  MOE_CHECK(p.eps_form >= 0 && p.eps_form <= 2,
            "qk_norm: eps_form=" << p.eps_form << ", expected 0 (mean + eps), 1 (sum + eps) or 2 (max(sqrt, eps))");
  MOE_CHECK(p.scaled == 0 || p.scaled == 1, "qk_norm: scaled=" << p.scaled << ", expected 0 or 1");
}

// One head vector x -> out = (x * inv) * scale, inv by the eps form (qk_norm_inv).
template <class Acc>
static void norm_head(const QkNormParams& p, const float* x, float* out, Acc scale) {
  const int64_t dk = p.head_dim;
  Acc ss = 0;
  for (int64_t i = 0; i < dk; ++i) ss += Acc(x[i]) * Acc(x[i]);
  const Acc inv = qk_norm_inv<Acc>(p, ss);
  for (int64_t i = 0; i < dk; ++i) out[i] = float((Acc(x[i]) * inv) * scale);
}

template <class Acc>
void qk_norm_ref(const QkNormParams& p, std::span<const float> q, std::span<const float> k, std::span<float> q_out,
                 std::span<float> k_out) {
  qk_norm_validate(p, q, k, q_out, k_out);
  const auto [q_scale, k_scale] = qk_norm_factors<Acc>(p);
  const int64_t rows = p.tokens * p.heads;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t off = r * p.head_dim;
    norm_head<Acc>(p, q.data() + off, q_out.data() + off, q_scale);
    norm_head<Acc>(p, k.data() + off, k_out.data() + off, k_scale);
  }
}

template void qk_norm_ref<float>(const QkNormParams&, std::span<const float>, std::span<const float>,
                                 std::span<float>, std::span<float>);
template void qk_norm_ref<double>(const QkNormParams&, std::span<const float>, std::span<const float>,
                                  std::span<float>, std::span<float>);

}  // namespace moe
