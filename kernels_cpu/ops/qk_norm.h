// qk_norm: unweighted per-head RMSNorm of the linear-attention q and k, with the q/k scales
// folded in (docs/ops/norms.md "Linear-attention q/k norm"; docs/ops/verification.md "MLX numerics versus HF").
//
// Shape contract:
//   q, k          [tokens, heads, head_dim] f32, row-major   heads = Hk, head_dim = dk
//   q_out, k_out  [tokens, heads, head_dim] f32              q_out may be the same buffer as q and
//                                                            k_out the same as k; an output that
//                                                            otherwise overlaps any buffer is an
//                                                            error (q and k may share memory)
// Per head vector x of length dk (q and k independently):
//   inv   = 1 / sqrt(sum_i x_i^2 / dk + eps)                 eps = 1e-6 in every engine and MLX
//   q_out = (q * inv) * (1/dk)        k_out = (k * inv) * (1/sqrt(dk))
// i.e. k_out = k / sqrt(|k|^2 + dk*eps) and q_out = q / (sqrt(dk) * sqrt(|q|^2 + dk*eps)).
// This is MLX's `inv_scale^2 * rms_norm(q, eps)`, `inv_scale * rms_norm(k, eps)`.
//
// HF difference (docs/ops/verification.md "Linear-attention q/k epsilon"): the HF torch reference uses l2norm,
// x / sqrt(sum x^2 + 1e-6), i.e. eps *inside* sum x^2, where this op (and MLX, CPU-C, CPU-R,
// Metal, VK) has dk*eps = 1.28e-4 there. The two agree to relative (dk - 1) * eps / (2 |x|^2),
// which only matters for near-zero heads; the checkpoints target the MLX form, so it is the one
// computed here.
//
// Conventions (docs/ops/norms.md "q/k norm conventions"): eps_form picks where eps enters
//   0  inv = 1 / sqrt(ss / dk + eps)       (above: MLX, ours)
//   1  inv = 1 / sqrt(ss + eps)            (HF torch l2norm)
//   2  inv = 1 / max(sqrt(ss), eps)        (ggml l2_norm)
// and scaled whether the q/k factors follow: forms 0 (an RMS norm, |x inv| = sqrt(dk)) q 1/dk and
// k 1/sqrt(dk) as above; forms 1 and 2 (an L2 norm, |x inv| = 1) q 1/sqrt(dk) and k none; so
// |q_out| = 1/sqrt(dk) and |k_out| = 1 in every form. scaled = 0: no factor (ggml, whose
// delta_net takes the q scale as its out_scale).
//
// f32 tier order (CPU-C cpu_rms_norm_bare + scale, bit-exact with it): ss = sum of rounded
// x*x in index order (no FMA); inv = 1 / sqrtf(ss / (float)dk + eps); inv_scale = 1 / sqrtf(dk);
// q_scale = inv_scale * inv_scale; q_out = (q * inv) * q_scale; k_out = (k * inv) * inv_scale.
// Other forms: inv = 1 / sqrtf(ss + eps) or 1 / fmaxf(sqrtf(ss), eps); a factor of 1 where the
// form has none (a product by 1 is exact).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <utility>

namespace moe {

struct QkNormParams {
  int64_t tokens = 1;
  int64_t heads = 16;      // Hk (linear_num_key_heads)
  int64_t head_dim = 128;  // dk (linear_key_head_dim)
  float eps = 1e-6f;
  // Conventions (defaults: the contract above).
  int64_t eps_form = 0;  // 0: 1/sqrt(ss/dk + eps); 1: 1/sqrt(ss + eps) (HF); 2: 1/max(sqrt(ss), eps) (ggml)
  int64_t scaled = 1;    // 1: the form's q/k factors; 0: none
  template <class F>
  void visit(F&& f) const {
    f("tokens", tokens), f("heads", heads), f("head_dim", head_dim), f("eps", eps);
    visit_conventions(*this, f);
  }
  // The convention fields alone (a manifest's "conventions" sets them; Self may be const).
  template <class Self, class F>
  static void visit_conventions(Self& s, F&& f) {
    f("eps_form", s.eps_form), f("scaled", s.scaled);
  }
};

// The factors after the norm, by convention: {q's, k's}, each 1 where there is none. In Acc, from
// s = 1/sqrt(dk) computed in Acc (form 0's q factor is s * s, as CPU-C forms it).
template <class Acc>
inline std::pair<Acc, Acc> qk_norm_factors(const QkNormParams& p) {
  if (!p.scaled) return {Acc(1), Acc(1)};
  const Acc s = Acc(1) / std::sqrt(Acc(p.head_dim));
  return p.eps_form == 0 ? std::pair<Acc, Acc>{s * s, s} : std::pair<Acc, Acc>{s, Acc(1)};
}

// inv of one head from its sum of squares ss, by p.eps_form, in Acc.
template <class Acc>
inline Acc qk_norm_inv(const QkNormParams& p, Acc ss) {
  const Acc eps = Acc(p.eps);
  if (p.eps_form == 1) return Acc(1) / std::sqrt(ss + eps);
  if (p.eps_form == 2) return Acc(1) / std::max(std::sqrt(ss), eps);
  return Acc(1) / std::sqrt(ss / Acc(p.head_dim) + eps);
}

template <class Acc>
void qk_norm_ref(const QkNormParams& p, std::span<const float> q, std::span<const float> k, std::span<float> q_out,
                 std::span<float> k_out);
void qk_norm_fast(const QkNormParams& p, std::span<const float> q, std::span<const float> k, std::span<float> q_out,
                  std::span<float> k_out);

// Shared by every tier: argument validation with messages naming the op.
void qk_norm_validate(const QkNormParams& p, std::span<const float> q, std::span<const float> k,
                      std::span<const float> q_out, std::span<const float> k_out);

}  // namespace moe
