// softmax's spec: its shapes, its seeded inputs and its error bound, read by the CPU three-way
// check (kernels_cpu/check/softmax_check.cpp) and the GPU cases (compare/cases/softmax_case.cpp,
// also for mutate). The op itself: kernels_cpu/ops/softmax.h.
#pragma once
#include <span>
#include <vector>

#include "ops/softmax.h"
#include "spec/precision_model.h"
#include "spec/shape.h"

namespace moe {

// The mask a shape draws (every value exact in f16, as ggml's f16 mask holds it):
//   None      mask_rows 0;
//   Causal    mask_rows = tokens, cols = past + tokens: row t masks (-inf) columns > past + t;
//   Bias      finite biases k / 8, k uniform in [-64, 64];
//   Zero      all 0 (a decode step: nothing masked);
//   CausalFullRow  Causal with mask row 0 all -inf (its x rows give NaN throughout);
//   FarNegative    -200 + k / 8, k uniform in [-64, 64] (exact in f16: spacing 1/8 there).
enum class SoftmaxMask { None, Causal, Bias, Zero, CausalFullRow, FarNegative };
struct SoftmaxVariant {
  SoftmaxMask mask = SoftmaxMask::None;
};

// x: raw attention scores N(0, 16^2) (q.k over 256 dims of unit-variance entries).
struct SoftmaxInputs {
  std::vector<float> x, mask;
};
SoftmaxInputs softmax_inputs(const SoftmaxParams& p, uint64_t seed, const SoftmaxVariant& v);

// Remainders: cols 1, 3 and odd widths around subgroup, vector and 256-wide workgroups, past 32k
// (a long context); causal prefills with and without past (heads > 1: the mask broadcast); a
// decode row with a zero mask; finite biases; scales -64 (every exp but the max's underflows) and
// 30 (rows far sharper than any model's); a fully masked row. Real: A17B decode over 4096 and a
// 64-token prefill, A3B 32 tokens after 1000, DeepSeek-V3's 128 heads over 32768.
std::vector<SpecShape<SoftmaxParams, SoftmaxVariant>> softmax_shapes(bool remainders, bool real);

// Per element of y, first order in u. Row r: z_p = x_p scale + mask_p exact (f64), the masked
// positions (z_p = -inf) excluded: there y is exactly 0 (exp(-inf) = 0), bound 0. The computed
// z^_p: the product and the sum round once each (or once, fused): |z^_p - z_p| <= u (|x_p scale| +
// |z_p|) <= Ds = u (max_p |x_p scale| + A), A = max_p |z_p|; the exponents z^_p - max z^ then err
// by spec/attention_bound.h exponent_error(Ds, A, one pass), and the weights by its
// softmax_row_bound over the row's unmasked z (one pass: the kernels and the f32 tiers sum the
// stored exps once): P_p eta_p. Plus the truth's rounding u P_p, and for exps flushed from the
// subnormal range 2^-126 (2 + P_p len), as attention's softmax stage. A fully masked row: NaN in
// the truth, bound 0 (a NaN must be met by a NaN).
std::vector<double> softmax_bound(const SoftmaxParams& p, std::span<const float> x, std::span<const float> mask,
                                  const PrecisionModel& m);

}  // namespace moe
