// matvec_bf16's spec: its shapes, its seeded inputs and its error bound, read by the CPU three-way
// check (kernels_cpu/check/matvec_bf16_check.cpp), the GPU cases (compare/cases/matvec_bf16_case.cpp,
// also for mutate) and, through the GPU backend, bisect. The op itself: kernels_cpu/ops/matvec_bf16.h.
#pragma once
#include <span>
#include <vector>

#include "core/bf16.h"
#include "ops/matvec_bf16.h"
#include "spec/precision_model.h"
#include "spec/shape.h"

namespace moe {

// Router-gate-like weights N(0, 1/cols) in bf16; activations with outlier channels.
struct MatvecBf16Inputs {
  std::vector<bf16> W;
  std::vector<float> x;
};
MatvecBf16Inputs matvec_bf16_inputs(const MatvecBf16Params& p, uint64_t seed);

struct MatvecBf16Variant {
  bool gpu = true;  // false: a CPU check shape (around the fast tier's 16-lane blocking) the GPU cases skip
};
using MatvecBf16Shape = SpecShape<MatvecBf16Params, MatvecBf16Variant>;
// Remainders: odd column counts (rows on odd element offsets, a row starting in a word's high
// half), whole 8-element octets, past the 8192-float input caches, rows around a few rows per
// workgroup and past multiples of 1024. Real: the DeepSeek-V3 router gate.
std::vector<MatvecBf16Shape> matvec_bf16_shapes(bool remainders, bool real);

// Per row, given the truth's y (f64, rounded once to f32): a product w x (8 x 24 significant
// bits) is exact when fused and rounded once otherwise, and the cols terms reach the result
// through at most cols - 1 additions in any order (a subgroup tree adds lanes' partial sums,
// still one binary tree over the terms; empty lanes add an exact 0): |y - sum w x| <=
// m.sum(cols) sum |w x| (summed in f64, where each product is exact). The truth's rounding adds
// u |y|; its own f64 error (<= gamma_cols(2^-53) sum |w x|) and the u^2 terms are below the
// slack of gamma_n over n u. Floor: the smallest normal, for results near underflow (and a
// device that flushes subnormal partials to zero).
std::vector<double> matvec_bf16_bound(const MatvecBf16Params& p, std::span<const bf16> W, std::span<const float> x,
                                      std::span<const float> truth, const PrecisionModel& m);

}  // namespace moe
