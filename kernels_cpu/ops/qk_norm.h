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
// f32 tier order (CPU-C cpu_rms_norm_bare + scale, bit-exact with it): ss = sum of rounded
// x*x in index order (no FMA); inv = 1 / sqrtf(ss / (float)dk + eps); inv_scale = 1 / sqrtf(dk);
// q_scale = inv_scale * inv_scale; q_out = (q * inv) * q_scale; k_out = (k * inv) * inv_scale.
#pragma once
#include <cstdint>
#include <span>

namespace moe {

struct QkNormParams {
  int64_t tokens = 1;
  int64_t heads = 16;      // Hk (linear_num_key_heads)
  int64_t head_dim = 128;  // dk (linear_key_head_dim)
  float eps = 1e-6f;
  template <class F>
  void visit(F&& f) const {
    f("tokens", tokens), f("heads", heads), f("head_dim", head_dim), f("eps", eps);
  }
};

template <class Acc>
void qk_norm_ref(const QkNormParams& p, std::span<const float> q, std::span<const float> k, std::span<float> q_out,
                 std::span<float> k_out);
void qk_norm_fast(const QkNormParams& p, std::span<const float> q, std::span<const float> k, std::span<float> q_out,
                  std::span<float> k_out);

// Shared by every tier: argument validation with messages naming the op.
void qk_norm_validate(const QkNormParams& p, std::span<const float> q, std::span<const float> k,
                      std::span<const float> q_out, std::span<const float> k_out);

}  // namespace moe
