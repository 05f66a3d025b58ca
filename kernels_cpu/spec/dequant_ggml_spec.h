// dequant_ggml's spec: its shapes, its seeded inputs and its bound (0: bit-exact), read by the CPU
// three-way check (kernels_cpu/check/dequant_ggml_check.cpp) and the GPU cases
// (compare/cases/dequant_ggml_case.cpp). The op: ops/dequant_ggml.h; the formats: core/ggml_blocks.h.
#pragma once
#include <vector>

#include "ops/dequant_ggml.h"
#include "spec/shape.h"

namespace moe {

using DequantGgmlShape = SpecShape<DequantGgmlParams>;

// Remainders, per format of matvec_ggml_types(): one block, a few rows of a few blocks, 33 rows of
// an odd block count, one row past 4096 columns, 65537 rows of one block (past the 65535
// workgroups a dispatch dimension holds). Real: rows of the families' embedding tables and expert
// matrices in the types llama.cpp's Q4_K_M / Q6_K / Q8_0 / F16 files store them.
std::vector<DequantGgmlShape> dequant_ggml_shapes(bool remainders, bool real);

// W: the blocks matvec_ggml_inputs draws (random codes and sub-block scales, f16 scales of real
// magnitudes, never NaN or Inf).
std::vector<uint8_t> dequant_ggml_inputs(const DequantGgmlParams& p, uint64_t seed);

// Bound 0 for every judge: each output is one weight, whose exact value is a product of an f16
// scale and integers of at most 14 significant bits (exact in f32) or a sum of two such products;
// fused or not, a correct kernel forms the exact value and rounds it at most once (Vulkan's +, *
// and fma are correctly rounded), which is the truth's f64 value rounded to f32. The sign of a
// zero is not the op's: a kernel computing d sc (q - 32) with d sc < 0 gives -0 where the truth's
// a + b gives +0 (ggml's get_rows for q6_K / iq4_xs does), the same weight, so the GPU judge
// compares values (|y - truth| <= 0), not bits.

}  // namespace moe
