// residual_add's spec: its shapes and its seeded inputs, read by the CPU three-way check
// (kernels_cpu/check/residual_add_check.cpp), the GPU cases (compare/cases/residual_add_case.cpp,
// also for mutate) and, through the GPU backend, bisect. The op itself: kernels_cpu/ops/residual_add.h.
// Its bound is 0 under every precision model: the sum of two f32 rounded once to f32 is the
// correctly rounded result (every CPU tier; Vulkan requires a correctly rounded +), and the truth
// (exact in f64 up to one rounding, then rounded to f32) is that same value, since f64's
// 53 bits >= 2*24 + 2 make the double rounding exact.
#pragma once
#include <vector>

#include "ops/residual_add.h"
#include "spec/shape.h"

namespace moe {

// a: the residual stream, b: a block output, both activations with outlier channels.
struct ResidualAddInputs {
  std::vector<float> a, b;
};
ResidualAddInputs residual_add_inputs(const ResidualAddParams& p, uint64_t seed);

// Remainders: n around subgroup, vector and 256-wide workgroup widths, past 8192 and 16384.
// Real: the A17B and A3B hidden states, decode and prefill (the CPU's fast tier threads the
// 256-token prefill).
std::vector<SpecShape<ResidualAddParams>> residual_add_shapes(bool remainders, bool real);

}  // namespace moe
