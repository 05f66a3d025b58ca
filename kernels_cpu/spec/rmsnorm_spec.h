// rmsnorm's spec: its shapes, its seeded inputs and its error bound, read by the CPU three-way
// check (kernels_cpu/check/rmsnorm_check.cpp), the GPU cases (compare/cases/rmsnorm_case.cpp, also
// for mutate) and, through the GPU backend, bisect. The op itself: kernels_cpu/ops/rmsnorm.h.
#pragma once
#include <span>
#include <vector>

#include "core/bf16.h"
#include "ops/rmsnorm.h"
#include "spec/precision_model.h"
#include "spec/shape.h"

namespace moe {

// x: activations with outlier channels; w: bf16 as checkpoints store it, N(1, 0.2^2) (1 + w folded
// in) or N(0, 0.2^2) (add_one). The CPU tiers read w widened exactly (spec/norm_bound.h).
struct RmsNormInputs {
  std::vector<float> x;
  std::vector<bf16> w;
};
// x_scale scales x (the shapes' variant; 1 but for the eps-dominated row).
RmsNormInputs rmsnorm_inputs(const RmsNormParams& p, uint64_t seed, float x_scale = 1.0f);

// Remainders: dim around subgroup and vector widths, both weight forms; more rows than one grid
// dimension of 512 workgroups; rows past the 4096 and 8192 floats engines cache in shared memory.
// A decode row scaled by 1e-3, whose mean square (~1e-6) is eps's size: eps dropped, negated or
// moved outside the root changes y by a factor near sqrt(2) or more. Real: the A17B and A3B
// hidden norms and per-head q/k norms, decode and prefill. The variant: x's scale.
std::vector<SpecShape<RmsNormParams, float>> rmsnorm_shapes(bool remainders, bool real);

// Per element of y, given the truth's y (f64, rounded once to f32), first order in u: inv =
// 1/sqrt(ss / dim + eps) within norm_inv_rel (spec/norm_bound.h); 1 + w, x * inv and * w' one
// rounding each; the truth's own rounding: |y| (norm_inv_rel(dim) + 4u) + the smallest normal.
// CPU: gamma_dim/2 + 7.5u; Vulkan rules: sum(dim)/2 + 11.5u.
std::vector<double> rmsnorm_bound(const RmsNormParams& p, std::span<const float> truth, const PrecisionModel& m);

}  // namespace moe
