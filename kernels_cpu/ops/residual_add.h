// residual_add: y = a + b elementwise (docs/ops/norms.md "SwiGLU, residual add, sigmoid gate").
//
// Shape contract:
//   a, b  [n] f32        e.g. the o_proj / MoE output and the residual stream
//   y     [n] f32        may be the same buffer as a or as b (VK calls it in place on the
//                        residual); any other overlap is an error
// One f32 rounding per element in every tier, so all three tiers are bit-identical: the truth
// adds in f64 and rounds once to f32, which equals the correctly rounded f32 sum (f64 holds
// 53 >= 2*24 + 2 bits, so the double rounding is innocuous). Overflow gives +-inf and
// inf + -inf gives NaN, as in the engines.
#pragma once
#include <cstdint>
#include <span>

namespace moe {

struct ResidualAddParams {
  int64_t n = 0;
  template <class F>
  void visit(F&& f) const {
    f("n", n);
  }
};

template <class Acc>
void residual_add_ref(const ResidualAddParams& p, std::span<const float> a, std::span<const float> b,
                      std::span<float> y);
void residual_add_fast(const ResidualAddParams& p, std::span<const float> a, std::span<const float> b,
                       std::span<float> y);

// Shared by every tier: argument validation with messages naming the op.
void residual_add_validate(const ResidualAddParams& p, std::span<const float> a, std::span<const float> b,
                           std::span<const float> y);

}  // namespace moe
