// softmax: y = softmax(x * scale + mask) over each row, the standalone softmax engines run
// between attention's score and value products (docs/ops/activations.md "Softmax"; HF
// torch.softmax(scores * scale + mask, dim=-1)).
//
// Shape contract:
//   x     [rows, cols] f32        scores; rows are (head, token) with token fastest
//   mask  [mask_rows, cols] f32   row r of x adds mask row r % mask_rows (ggml's [tokens, cols]
//                                 mask broadcast over heads); mask_rows 0: no mask, mask empty.
//                                 Values: 0, -inf (masked) or finite biases
//   y     [rows, cols] f32        may be the same buffer as x; must not overlap mask
//   scale f32, finite
// Order (ggml's soft_max): z = x * scale + mask (two roundings, or one where fused), then the
// softmax of core/softmax.h (max-subtracted, one pass summing the stored exps, times 1 / sum).
// The truth: z in f64 (x * scale exact, one rounding of the sum), then the same in f64.
// A row whose every z is -inf gives NaN throughout (max = -inf, exp(-inf - -inf) = exp(NaN)),
// in every tier, as ggml's shader and torch.softmax give. NaN in x or mask reaches its whole row.
#pragma once
#include <cstdint>
#include <span>

namespace moe {

struct SoftmaxParams {
  int64_t rows = 1;
  int64_t cols = 0;
  int64_t mask_rows = 0;
  float scale = 1.0f;
  template <class F>
  void visit(F&& f) const {
    f("rows", rows), f("cols", cols), f("mask_rows", mask_rows), f("scale", scale);
  }
};

template <class Acc>
void softmax_ref(const SoftmaxParams& p, std::span<const float> x, std::span<const float> mask, std::span<float> y);
void softmax_fast(const SoftmaxParams& p, std::span<const float> x, std::span<const float> mask, std::span<float> y);

// Shared by every tier: argument validation with messages naming the op.
void softmax_validate(const SoftmaxParams& p, std::span<const float> x, std::span<const float> mask,
                      std::span<const float> y);

}  // namespace moe
