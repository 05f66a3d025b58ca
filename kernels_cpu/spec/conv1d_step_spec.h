// conv1d_step's spec: its shapes, its seeded inputs and its error bound, read by the CPU three-way
// check (kernels_cpu/check/conv1d_step_check.cpp), the GPU cases (compare/cases/conv1d_step_case.cpp,
// also for mutate) and, through the GPU backend, bisect. The op itself: kernels_cpu/ops/conv1d_step.h.
#pragma once
#include <span>
#include <vector>

#include "core/bf16.h"
#include "ops/conv1d_step.h"
#include "spec/precision_model.h"
#include "spec/shape.h"

namespace moe {

struct Conv1dStepVariant {
  bool decode = false;      // the GPU runs one dispatch per token, the state kept on the device
  bool zero_state = false;  // from the sequence start (else mid-sequence)
  float x_scale = 1.0f;     // > 1 pushes acc into silu's exp-overflow region
};
using Conv1dStepShape = SpecShape<Conv1dStepParams, Conv1dStepVariant>;
// Remainders: channels around the GPU's 256-wide workgroups and the CPU's vector widths, K 1, 2,
// 4 (every Qwen model), 7 and the manifest's limit 8; |acc| up to ~200 (silu's exp overflows for
// acc < -88.7); past 16384 channels (engines size buffers for the models' 8192 and 12288).
// Real: C = 2 Hk dk + Hv dv: A17B 2*16*128 + 64*128 = 12288, A3B 2*16*128 + 32*128 = 8192.
std::vector<Conv1dStepShape> conv1d_step_shapes(bool remainders, bool real);

// x the raw in_proj_qkv outputs (activations, times x_scale), w the checkpoint's bf16 taps
// N(0, 0.3^2) (wb, and widened exactly in w), state0 the raw inputs of earlier tokens (times
// x_scale) or zero at the sequence start.
struct Conv1dStepInputs {
  std::vector<float> x, w, state0;
  std::vector<bf16> wb;
};
Conv1dStepInputs conv1d_step_inputs(const Conv1dStepParams& p, uint64_t seed, const Conv1dStepVariant& v);

// Per element of y [T, C], given the truth's y and the state before the first token (the state
// is exact data: every implementation's window equals the truth's at every token). First order
// in u, any order of the sum, fused or not:
//   acc is a sum of K products: |dacc| <= m.sum(K) sum |terms| (the truth's f64 sum of exact f32
//     products is exact to 2^-53, negligible). silu' is bounded by 1.0999 < 1.1, so y moves by
//     at most 1.1 |dacc|.
//   silu(a) = a / (1 + E), E = exp(-a): exp's m.exp_rel(|a|), |a| at most |acc_true| + dacc,
//     reaches y damped by E / (1 + E) = 1 - sigmoid(a) (taken at its largest); 1 + E rounds once
//     (u), the division m.division_rel, the truth's rounding to f32 u.
//   Floor 2^-119 = 1.5e-36: for acc < -87.3, 1 + E >= 2^126 is outside the range where Vulkan
//     defines division, and past -88.72 E overflows in f32: an implementation may return -0 or a
//     flushed value there; the truth is |a| e^a <= 87.3 e^-87.3 < 1.1e-36. It covers subnormals.
// The state is the raw inputs moved between slots: bit-exact (bound 0).
std::vector<double> conv1d_step_bound(const Conv1dStepParams& p, std::span<const float> x, std::span<const float> w,
                                      std::span<const float> state0, std::span<const float> y,
                                      const PrecisionModel& m);

}  // namespace moe
