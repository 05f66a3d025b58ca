// What the norms' specs share (spec/{rmsnorm,rmsnorm_gated,qk_norm}_spec.cpp): the error of the
// inverse root mean square, per-element relative bounds, the per-head norms' remainder shapes and
// inputs, and the bf16 weights widened as the CPU tiers read them.
#pragma once
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/bf16.h"
#include "spec/precision_model.h"
#include "spec/shape.h"

namespace moe {

// Relative error of inv = 1/sqrt(ss / n + eps), ss a sum of n squares, first order in u: ss
// within m.sum(n) in any order (FMA or not); ss / n (m.division_rel) or ss * (1/n) (one more u);
// + eps rounds once (u; both terms are >= 0, so relative errors do not grow); the inverse square
// root halves its argument's relative error and adds its own (m.rsqrt_rel).
// CPU: gamma_n / 2 + 3.5u; Vulkan rules: m.sum(n) / 2 + 7.5u.
inline double norm_inv_rel(double n, const PrecisionModel& m) {
  return (m.sum(n) + m.division_rel + 2 * m.u) / 2 + m.rsqrt_rel;
}

// |truth| rel per element, plus the smallest normal for results in the subnormal range (a device
// may flush them).
inline std::vector<double> relative_bound(std::span<const float> truth, double rel) {
  std::vector<double> b(truth.size());
  for (size_t i = 0; i < truth.size(); ++i) b[i] = std::fabs(double(truth[i])) * rel + kMinNormal32;
  return b;
}

inline std::vector<float> widen_bf16(std::span<const bf16> v) {
  std::vector<float> w(v.size());
  for (size_t i = 0; i < v.size(); ++i) w[i] = bf16_to_f32(v[i]);
  return w;
}

// Heads as the linear-attention layer's norms see them: every 5th head of `rows` heads of
// head_dim shrunk by 1e-3, so that eps (1e-6 against a mean square of ~1e-6) takes part.
inline void shrink_every_fifth_head(std::vector<float>& v, int64_t rows, int64_t head_dim) {
  for (int64_t r = 0; r < rows; r += 5)
    for (int64_t i = 0; i < head_dim; ++i) v[size_t(r * head_dim + i)] *= 1e-3f;
}

// The per-head norms' remainders (P: QkNormParams or RmsNormGatedParams; d names the head dim,
// "dk" or "dv"): head dims around subgroup widths, past the limits engines size for (a head wider
// than 8192, more heads (129) than the 64 or 128 a kernel may hold or hard-wire; one token).
template <class P, class V>
void add_head_norm_remainders(std::vector<SpecShape<P, V>>& out, const std::string& d) {
  auto add = [&](std::string label, int64_t tokens, int64_t heads, int64_t head_dim, uint64_t offset) {
    P p;
    p.tokens = tokens, p.heads = heads, p.head_dim = head_dim, p.eps = 1e-6f;
    out.push_back({std::move(label), p, offset});
  };
  for (int64_t hd : {1, 31, 33, 67, 129, 4099}) add("remainder " + d + " " + std::to_string(hd), 2, 3, hd, uint64_t(hd));
  add("remainder T 1 " + d + " 8257", 1, 2, 8257, 8257);
  add("remainder T 1 heads 129 " + d + " 128", 1, 129, 128, 129 * 128);
  add("remainder T 1 heads 3 " + d + " 67", 1, 3, 67, 3 * 67);  // decode, a head narrower than a workgroup
}

}  // namespace moe
