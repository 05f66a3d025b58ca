// dequant's spec: its shapes, its seeded inputs and its bound (0: bit-exact), read by the CPU
// three-way check (kernels_cpu/check/dequant_check.cpp), the GPU cases
// (compare/cases/dequant_case.cpp, also for mutate). The op itself: kernels_cpu/ops/dequant.h.
#pragma once
#include <vector>

#include "core/quant.h"
#include "ops/dequant.h"
#include "spec/shape.h"

namespace moe {

// W: random codes, scales and biases as random_quant draws them (Rng fork 1).
QuantStorage dequant_inputs(const DequantParams& p, uint64_t seed);

struct DequantVariant {
  bool gpu = true;  // false: a CPU check shape the GPU cases cover under other labels
};
using DequantShape = SpecShape<DequantParams, DequantVariant>;
// Remainders: row counts off every power of two (33: scale pairs straddle rows), one group to 65
// groups per row and one row past 8192 and 16384 columns (the widths engines size shared buffers
// for), every bit width, group sizes 32, 64 and 128. Real: embedding rows, expert and gate
// matrices of both models at their bit widths and the other model's.
std::vector<DequantShape> dequant_shapes(bool remainders, bool real);

// Bound 0 (bit-exact) for every judge: each output is one dequantised weight q s + b, and q s is
// exact in f32 (an integer < 2^8 times an 8-bit bf16 significand fits in 24 bits), so fused or
// not every implementation rounds the same exact value q s + b once (Vulkan: +, * and fma are
// correctly rounded), as the truth's f64 sum of two f32 values rounded to f32 does (correctly
// rounded since 53 >= 2*24 + 2).

}  // namespace moe
