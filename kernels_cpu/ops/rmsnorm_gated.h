// rmsnorm_gated: gated RMSNorm per value head, the linear-attention output norm
// (docs/ops/norms.md "Gated RMSNorm", "Two RMSNorm conventions"; HF Qwen3NextRMSNormGated).
//
// Shape contract:
//   o [tokens, heads, head_dim] f32, row-major   recurrence output; heads = Hv, head_dim = dv
//   z [tokens, heads, head_dim] f32              in_proj_z output (the gate)
//   w [head_dim] f32                             one weight shared by every head, used as is
//                                                (no +1: this norm is not zero-centred)
//   y [tokens, heads, head_dim] f32              may be the same buffer as o or as z; any other
//                                                overlap is an error
// Per head: inv = 1 / sqrt(sum_i o_i^2 / dv + eps); y_i = o_i * inv * w_i * silu(z_i),
// silu(z) = z / (1 + exp(-z)) (the division form every engine uses, docs/ops/README.md "Scalar helpers").
// f32 tier order (CPU-C/CPU-R, bit-exact with them): ss = sum of rounded o*o in index order (no
// FMA); inv = 1 / sqrtf(ss / (float)dv + eps); y = ((o * inv) * w) * (z / (1 + expf(-z))).
// (Metal/VK associate ((o*inv)*silu(z))*w instead: ULP-level differences, inside the bound.)
// For z < -88.72 expf(-z) overflows, so the f32 tiers (like every engine) give silu = -0 where
// the truth has |silu| = |z| e^z < 3e-37 (docs/ops/verification.md "Edge cases"); the check accepts that there.
#pragma once
#include <cstdint>
#include <span>

namespace moe {

struct RmsNormGatedParams {
  int64_t tokens = 1;
  int64_t heads = 64;      // Hv (linear_num_value_heads): 64 in A17B, 32 in A3B
  int64_t head_dim = 128;  // dv (linear_value_head_dim)
  float eps = 1e-6f;
  template <class F>
  void visit(F&& f) const {
    f("tokens", tokens), f("heads", heads), f("head_dim", head_dim), f("eps", eps);
  }
};

template <class Acc>
void rmsnorm_gated_ref(const RmsNormGatedParams& p, std::span<const float> o, std::span<const float> z,
                       std::span<const float> w, std::span<float> y);
void rmsnorm_gated_fast(const RmsNormGatedParams& p, std::span<const float> o, std::span<const float> z,
                        std::span<const float> w, std::span<float> y);

// Shared by every tier: argument validation with messages naming the op.
void rmsnorm_gated_validate(const RmsNormGatedParams& p, std::span<const float> o, std::span<const float> z,
                            std::span<const float> w, std::span<const float> y);

}  // namespace moe
