// moe_combine's spec: its shapes, its seeded inputs and its error bound, read by the CPU
// three-way check (kernels_cpu/check/moe_combine_check.cpp), the GPU cases
// (compare/cases/moe_combine_case.cpp, also for mutate) and, through the GPU backend, bisect.
// The op itself: kernels_cpu/ops/moe_combine.h.
#pragma once
#include <span>
#include <vector>

#include "ops/moe_combine.h"
#include "spec/precision_model.h"
#include "spec/shape.h"

namespace moe {

// Inputs as the layer produces them: h_mid activations with outlier channels, expert and shared
// outputs N(0, 1), gate logits N(0, 2^2), router weights positive and renormalised to sum 1 per
// token (docs/ops/moe.md "Softmax router"). e holds a token's K expert rows in one buffer [K, dim].
struct MoeCombineInputs {
  std::vector<float> h, e, w, sh, gamma;
};
MoeCombineInputs moe_combine_inputs(const MoeCombineParams& p, uint64_t seed);

// Remainders: dim around the GPU's 256-wide workgroups and the CPU's vector widths; K 1 and 3,
// gated and ungated; no routed experts (K 0); past the limits engines size for (K 17, 33; rows
// past 8192 and 16384). Real: the A17B, A3B, Metal-capacity and DeepSeek-V3 combines.
std::vector<SpecShape<MoeCombineParams>> moe_combine_shapes(bool remainders, bool real);

// Per element of out [T, d], given the truth's out (f64, rounded once to f32). First order in u:
// out sums K + 2 terms h, w_k e_k and sh*sig; each product rounds at most once (or is fused) and a
// term meets at most K + 1 additions in any order: m.sum(K + 2) * (|h| + sum |w_k e_k| + |sh sig|).
// sigmoid = 1 / (1 + exp(-gamma)): exp's error, 1 + E rounding once (u; E's relative error passes
// through scaled by E / (1 + E) <= 1), the division, and the product with sh (u):
// (exp_rel(gamma) + division_rel + 2u) |sh sig|; ungated, sig = 1 exactly and nothing. The
// truth's rounding adds u |out|; the smallest normal floors results near underflow (and flushed
// subnormal products).
std::vector<double> moe_combine_bound(const MoeCombineParams& p, std::span<const float> h, std::span<const float> e,
                                      std::span<const float> w, std::span<const float> sh,
                                      std::span<const float> gamma, std::span<const float> truth,
                                      const PrecisionModel& m);

}  // namespace moe
