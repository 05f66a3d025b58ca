// matvec_ggml's spec: its shapes, its seeded inputs (ggml blocks with realistic scales) and its
// error bound, read by the CPU three-way check (kernels_cpu/check/matvec_ggml_check.cpp) and the
// GPU cases (compare/cases/matvec_ggml_case.cpp, also for mutate). The op: ops/matvec_ggml.h; the
// formats: core/ggml_blocks.h.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "ops/matvec_ggml.h"
#include "spec/precision_model.h"
#include "spec/quant_dot_spec.h"
#include "spec/shape.h"

namespace moe {

// QuantDotVariant (spec/quant_dot_spec.h): exact inputs, the CPU check's row windows, GPU or not.
using MatvecGgmlShape = SpecShape<MatvecGgmlParams, QuantDotVariant>;

// The block formats of the op's shapes, in this order: every format core/ggml_blocks.h decodes
// except f64 (no GGUF of these families holds one).
const std::vector<uint32_t>& matvec_ggml_types();

// Remainders, per format: one block, a few blocks, an odd block count past the kernels' per-
// iteration column span, a 4096-wide row plus one block with 3 tokens and 8 tokens (ggml's
// largest mul_mat_vec column count), row counts around 1/2/4-row workgroups, and the exact inputs.
// Real: the A3B / A17B / DeepSeek-V3 projections in the types a Q4_K_M / Q8_0 GGUF stores them in,
// one decode token.
std::vector<MatvecGgmlShape> matvec_ggml_shapes(bool remainders, bool real);

struct MatvecGgmlInputs {
  std::vector<uint8_t> W;  // rows * row_bytes, the blocks
  std::vector<float> x;    // [tokens, cols]
  BlockMatrix view(const MatvecGgmlParams& p) const { return {uint32_t(p.type), W.data(), p.rows, p.cols}; }
};

// W: every byte random (codes, sub-block scales and mins), then each block's f16 scales set to a
// value of a magnitude real checkpoints have (|W| up to ~0.1; d's sign random where the format
// allows it; m or dmin 0 in every fifth block of the formats that have one), never NaN or Inf; f32 / f16 / bf16 weights N(0, 0.05). x: activations with outlier
// channels (Rng::activations). Exact: every f16 scale 1 (dmin and m 0.5) and x one-hot per token:
// every weight, product and partial sum any correct kernel forms is a small multiple of 2^-1 or a
// product with 0, exact in f32, so the bound is 0 (f32 / f16 / bf16 weights times 1 and 0 too).
MatvecGgmlInputs matvec_ggml_inputs(const MatvecGgmlParams& p, uint64_t seed, bool exact);

// Per element (t, r) of Y, given the truth's Y (f64 sums rounded once to f32), first order in u.
// A term is the weight W = a + b (core/ggml_blocks.h ggml_dequant_parts) rounded once, times x
// (the CPU tiers: magnitude |W x|), or a and b kept apart (a kernel's d (sum q x) + m (sum x),
// ggml's dot(b, v) then * d: magnitude (|a| + |b|) |x|, PrecisionModel::quant_weight_rounded_once).
// The roundings any order can take: each of the cols products, the sums within a block (<= 32 deep
// where a kernel sums a block's codes before scaling), the scale products (d, d sc: exact for these
// formats' integer codes and 6/8-bit scales, at most one rounding each where a kernel forms d x
// first), and the sums across blocks, lanes and subgroups: fewer than cols + 8 in a chain for
// every cols >= 32, so |Y - sum W x| <= m.sum(cols + 8) mag. The truth adds its f64 sum's
// gamma_{cols+1}(2^-53) mag and its own rounding u |Y|; floor (cols + 2) 2^-126 for subnormals a
// GPU may flush.
// The CPU fast tier's model for type `type`: cpu_f32_model(), except that q4_0 and q4_K may be
// summed factored (d (sum q x) + m (sum x), ops/matvec_ggml_fast_x86.cpp), so their terms' roundings
// scale with (|a| + |b|) |x| (quant_weight_rounded_once false); the other formats round each
// weight once.
PrecisionModel matvec_ggml_fast_model(uint32_t type);

std::vector<double> matvec_ggml_bound(const MatvecGgmlParams& p, const BlockMatrix& W, std::span<const float> x,
                                      std::span<const float> truth, const PrecisionModel& m);

}  // namespace moe
