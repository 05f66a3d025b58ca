// rmsnorm_gated's spec: its shapes, its seeded inputs and its error bound, read by the CPU
// three-way check (kernels_cpu/check/rmsnorm_gated_check.cpp), the GPU cases
// (compare/cases/rmsnorm_gated_case.cpp, also for mutate) and, through the GPU backend, bisect.
// The op itself: kernels_cpu/ops/rmsnorm_gated.h.
#pragma once
#include <span>
#include <vector>

#include "core/bf16.h"
#include "ops/rmsnorm_gated.h"
#include "spec/precision_model.h"
#include "spec/shape.h"

namespace moe {

// o: the recurrence output, activations with every 5th head shrunk by 1e-3 so that eps takes
// part (spec/norm_bound.h); z: the gate projection (activations: N(0, 1) with x20 outliers, so
// silu sees both tails and, now and then, z < -87); w: the checkpoint's bf16 weight around 1 (the
// CPU tiers read it widened exactly).
struct RmsNormGatedInputs {
  std::vector<float> o, z;
  std::vector<bf16> w;
};
RmsNormGatedInputs rmsnorm_gated_inputs(const RmsNormGatedParams& p, uint64_t seed);

// Remainders: the per-head norms' (spec/norm_bound.h). Real: the A17B (Hv 64) and A3B (Hv 32)
// layers, dv 128, decode and prefill.
std::vector<SpecShape<RmsNormGatedParams>> rmsnorm_gated_shapes(bool remainders, bool real);

// Per element of y, given the truth's y (f64, rounded once to f32), relative to |y|, first order in u:
//   inv = 1/sqrt(ss / dv + eps): norm_inv_rel(dv) (spec/norm_bound.h).
//   silu(z) = z * sigmoid(z): exp(+-z) m.exp_rel(z); it enters 1 + e with weight e/(1+e) <= 1
//     (and e/(1+e) in the z < 0 form at 1/(1+e) <= 1); the sum u; the division division_rel
//     (denominator in [1, 2] in the overflow-free form, or <= 2^126 in the engines'
//     z / (1 + exp(-z)) for z >= -87); a reciprocal-then-product form: u more. Where e underflows
//     (|z| > 87.3) and is flushed, the absolute error on sigmoid ~ 1 is < 2^-126: below u.
//   ((o * inv) * w) * silu, any association: 3u. The truth's own rounding to f32: u.
//   Total: norm_inv_rel(dv) + exp_rel(z) + division_rel + 6u, plus the smallest normal.
//   CPU: gamma_dv/2 + 12.5u; Vulkan rules: sum(dv)/2 + (24.5 + 4|z|)u.
// For z < -87 (e^z < 2^-125.5) silu is below 2^-126 |z|: a kernel may give -0 (z / (1 + inf):
// expf(-z) overflows past z < -88.72 in every f32 tier and engine, docs/ops/verification.md "Edge
// cases"; or a flushed exp) or a subnormal-derived value of at most |z| 2^-126 (1 + 2^-20), so
// there the bound is |y| + |o inv w| |z| 2^-125 + the smallest normal (|o inv w| from the f64
// values: the result's magnitude is bounded, not its relative error).
std::vector<double> rmsnorm_gated_bound(const RmsNormGatedParams& p, std::span<const float> o,
                                        std::span<const float> z, std::span<const float> w,
                                        std::span<const float> truth, const PrecisionModel& m);

}  // namespace moe
