// attention's spec: its shapes (the whole op's and its GPU stage chain's), its seeded inputs and
// its error bound, read by the CPU three-way check (kernels_cpu/check/attention_check.cpp), the
// GPU cases of the op and of its stages (compare/cases/attention_case.cpp, also for mutate) and,
// through the GPU backend, bisect. The op itself: kernels_cpu/ops/attention.h.
#pragma once
#include <span>
#include <vector>

#include "ops/attention.h"
#include "spec/precision_model.h"
#include "spec/shape.h"

namespace moe {

// Inputs with the statistics of a real layer: q per head RMS-normalised times a per-head gain in
// [0.25, 2.5] (flat to peaked attention); keys N(0, 1) around a per-(kv head, channel) mean
// N(0, 0.5) shared by all positions, as real keys are; values are activations (outlier channels
// x20); gate N(0, 2^2). Cache rows from `past` on hold junk (keys 1000 + i % 4096, values -7)
// that the append must overwrite exactly where it should.
struct AttentionInputs {
  std::vector<float> q, gate, k, v, k_cache, v_cache;  // caches before the append
};
AttentionInputs attention_inputs(const AttentionParams& p, uint64_t seed);
// The caches after the append: rows [past, past + T) := k, v.
void attention_append(const AttentionParams& p, const AttentionInputs& in, std::vector<float>& kc,
                      std::vector<float>& vc);

struct AttentionVariant {
  int64_t steps = 1;  // the GPU's calls of p.tokens / steps tokens each on caches kept on the device
  bool gpu = true;    // false: the CPU check's own shapes (contexts to 8191 at T 8: too slow for lavapipe)
};
using AttentionShape = SpecShape<AttentionParams, AttentionVariant>;
// The GPU's shapes take the f32 scale a kernel is handed (1/sqrtf(D) where the models leave it)
// and capacity past + T + 2 (a write one row too far lands in the cache, decided exactly).
// Remainders: head_dim 1, 31, 33, 64, 67 around the kernels' 32/64/256 blocks and the CPU tiers'
// widths, GQA groups of 1 to 4, kv lengths crossing 8/32/64/256 and the fast tier's 1024-row
// chunks, prefills of 3 to 64 tokens (the causal edge inside a block), decodes and chunked
// prefills over several calls, large scores (scale 4: where exp without the max subtraction
// overflows), an explicit scale; past the limits engines size for: head_dim 512 and 520, 130 q
// heads, a kv length past 8192. Real: head_dim 256, A17B 32 q / 2 kv heads, A3B 16 / 2, contexts
// 0 to 8191 (docs/ops/attention.md "GPU attention paths").
std::vector<AttentionShape> attention_shapes(bool remainders, bool real);
// The stage chain's shapes (GPU only: kv_append, attention_scores, attention_softmax,
// attention_values, attention_gate); steps > 1 only for kv_append's appends over several calls.
std::vector<AttentionShape> attention_stage_shapes(bool remainders, bool real);

// The gate's relative error on o = a sig(g) (a exact): exp(-g), which 1 + E passes on scaled by
// E / (1 + E) <= 1, plus its own rounding; the division; the product.
double attention_gate_rel(double g, const PrecisionModel& m);

// Per element of o [T, Hq D] against the truth o (f64, rounded once to f32), given the caches after
// the append, for an f32 evaluation in one pass (chunk 0: a GPU chain of stages or a fused
// kernel, the f32 tier) or an online softmax in chunks of `chunk` rows (the fast tier). Per (t, h),
// len rows, exact scores s_p, A = max_p scale sum_d |q_d K_pd|:
//  * scores: the dot in any order (fused or not) m.sum(D) A, times scale one rounding (or q
//    pre-scaled): Ds = m.sum(D) A (1 + u) + u A + D 2^-126 scale (products flushed from the
//    subnormal range); the exponents: spec/attention_bound.h exponent_error;
//  * the weights and the values' weighted sum a_d: softmax_row_bound, weighted_sum_error over |V|
//    (an intermediate a chain stores in f32 is exact in f32: a stage's output is the next's input);
//  * gate: o^ = a^ sig^ (1 + gr): sig (1 + gr) err_a + gr sig W_d, |a_d| <= W_d = sum_p P_p |V_pd|;
//  * exp results and products below 2^-126 flushed: 2^-125 (1 + sum_p |V_pd|) + len 2^-126;
//  * the truth: its rounding to f32 u |o|; its own f64 error (the same terms in 2^-53, far below u
//    sig W_d for scores up to ~1e3 and D + len up to ~1e5) u sig W_d.
std::vector<double> attention_bound(const AttentionParams& p, std::span<const float> q, std::span<const float> gate,
                                    std::span<const float> k_cache, std::span<const float> v_cache,
                                    std::span<const float> o, int64_t chunk, const PrecisionModel& m);

}  // namespace moe
