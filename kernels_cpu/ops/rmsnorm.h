// rmsnorm: RMSNorm over each row (docs/ops/norms.md "RMSNorm", "Per-head q/k norm", "Two RMSNorm conventions").
//
// Shape contract:
//   x [rows, dim] f32, row-major        rows = tokens, or tokens*heads for the per-head q/k norm
//   w [dim] f32                         one weight shared by every row (bf16 in checkpoints,
//                                       widened exactly at load)
//   y [rows, dim] f32                   may be the same buffer as x
//   y[r][i] = x[r][i] / sqrt(mean_i(x[r][i]^2) + eps) * w'[i],  w' = w (MLX/engines: the +1 of
//   HF's zero-centred norm is already folded into the stored weight) or 1 + w (add_one: HF
//   checkpoints as published, computed in f32 like HF).
// f32 tier order (CPU-C/CPU-R, bit-exact with them): ss = sum of rounded x*x in index order (no
// FMA), inv = 1 / sqrtf(ss / (float)dim + eps), y = (x * inv) * w'.
#pragma once
#include <cstdint>
#include <span>

namespace moe {

struct RmsNormParams {
  int64_t rows = 1;
  int64_t dim = 0;
  float eps = 1e-6f;
  bool add_one = false;
  template <class F>
  void visit(F&& f) const {
    f("rows", rows), f("dim", dim), f("eps", eps), f("add_one", add_one);
  }
};

template <class Acc>
void rmsnorm_ref(const RmsNormParams& p, std::span<const float> x, std::span<const float> w, std::span<float> y);
void rmsnorm_fast(const RmsNormParams& p, std::span<const float> x, std::span<const float> w, std::span<float> y);

// Shared by every tier: argument validation with messages naming the op.
void rmsnorm_validate(const RmsNormParams& p, std::span<const float> x, std::span<const float> w,
                      std::span<float> y);

}  // namespace moe
