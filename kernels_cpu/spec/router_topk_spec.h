// router_topk's spec, and what it shares with router_noaux's (spec/router_noaux_spec.h): the
// logits' distributions, the per-expert scores and their bounds that the near-tie rule judges
// the indices by, the weights' bounds as order statistics, and the CPU tiers' judge of both. Read
// by the CPU three-way checks (kernels_cpu/check/router_{topk,noaux}_check.cpp), the GPU cases
// (compare/cases/router_{topk,noaux}_case.cpp, also for mutate) and, through the GPU backend,
// bisect. The op itself: kernels_cpu/ops/router_topk.h.
#pragma once
#include <span>
#include <vector>

#include "core/rng.h"
#include "ops/router_topk.h"
#include "spec/precision_model.h"
#include "spec/shape.h"

namespace moe {

// The routers' input kinds. Gaussian: logits N(0, sigma^2). Ties: on a grid of 1/4, so exactly
// equal scores are common at the K-th place. NearTies: the grid plus N(0, 1e-6): scores that
// differ by about an implementation's rounding error. NegativeBias (router_noaux): bias ~ -0.9.
// AllEqual: every expert of a row ties. NonFinite, Nan: NaN and infinite logits (per op).
// Large (router_topk): logits far from 0, max >= 80 (router_topk_inputs).
enum class RouterData { Gaussian, NegativeBias, Ties, NearTies, NonFinite, AllEqual, Nan, Large };
struct RouterVariant {
  RouterData data = RouterData::Gaussian;
  // Whether the GPU cases run the shape too: the kernels' limits (K <= 64) and the planted-bug
  // expectations (tests/vulkan/route_compare_test.cpp) are written against the GPU's shapes.
  bool gpu = true;
};

// Logits [T, E] ~ N(0, sigma^2) from rng.fork(1), on the grid for Ties and NearTies, plus noise
// from `noise` (rng.fork(2), left for the caller's further draws) for NearTies.
std::vector<float> router_logits(int64_t T, int64_t E, double sigma, RouterData d, const Rng& rng, Rng& noise);

// Logits N(0, 2^2). NonFinite: token 0 some -inf logits (still valid), token 1 a NaN (bits
// 0xFF800001: negative, lowest payload), token 2 a +inf, token 3 all -inf (1 to 3 undefined:
// -1 and NaN). AllEqual: even tokens one grid value, odd tokens -0.0 and +0.0 in turn.
// Large: even tokens shifted by +100 (max >= 80: exp(x), or exp(x + max), overflows f32 past 88.7),
// odd tokens by -110 (max <= -100: exp(x) underflows to 0 for every expert, a 0 / 0). The
// softmax is shift-invariant and the op subtracts the max (docs/ops/README.md "Scalar helpers";
// HF's torch softmax does too), so its truth is defined there and a kernel that drops or
// misapplies the shift is wrong only at such rows: their common factor cancels everywhere else.
std::vector<float> router_topk_inputs(const RouterTopkParams& p, uint64_t seed, RouterData d);

using RouterTopkShape = SpecShape<RouterTopkParams, RouterVariant>;
// Remainders: E 1 to 67 at K 1, 2, E/2, E - 1, E (the CPU's); odd E below, at and above the
// GPU's 256 lanes, K = 64 (the kernel's most), all equal, NaN/inf tokens, E past 512 to 2053 with
// K above the models' 10 and Metal's 16, large logits (max >= 80 and <= -100), renormalised or not. Real: Qwen3.5-397B-A17B (512 experts, top-10) and
// Qwen3.6-35B-A3B (256, top-8) (docs/ops/models.md "Shape constants"), the engines' K = 4
// (docs/ops/moe.md "Which K"), decode and 64 tokens; A17B with large logits.
std::vector<RouterTopkShape> router_topk_shapes(bool remainders, bool real);

// What the judges of a router get: per expert [T, E] the score the near-tie rule ranks (score,
// score_bound: the GPU's Indices output, the CPU's router_judge), per slot [T, K] the weight's
// bound. Rows of an undefined token (idx -1) stay 0: they are matched exactly.
struct RouterBounds {
  std::vector<double> score, score_bound, w_bound;
};

// idx, w: the truth (router_topk_ref<double>), slots by descending w (the op's order).
RouterBounds router_topk_bounds(const RouterTopkParams& p, std::span<const float> logits, std::span<const int32_t> idx,
                                std::span<const float> w, const PrecisionModel& m);

// One row's per-expert errors, for router_weight_bounds: the ranked score and its bound; the
// weight's source value (p or s), its relative error not common to all experts (rel), the
// relative error of the value itself (direct, unrenormalised weights) and its absolute floor.
struct RouterRowErr {
  std::vector<double> score, score_bound, value, rel, direct;
  double floor = 0;
};

// The weights' bounds per slot, as order statistics (both routers; the argument at the
// definition). S: the truth's K experts in slot order; cand: the experts that may be chosen;
// T: the truth's weights; extra: the renormalisation's own relative error.
std::vector<double> router_weight_bounds(const RouterRowErr& r, std::span<const int32_t> S,
                                         std::span<const int32_t> cand, const float* T, int64_t K, bool renorm,
                                         double rsf, double extra, const PrecisionModel& m);

// Sorts every defined row (idx >= 0) of a [T, K] output to descending w, ties by ascending index.
void router_sort_rows(std::span<int32_t> idx, std::span<float> w, int64_t K);

// The CPU tiers' judge, the GPU's rules (compare/decide: decide_indices, the order statistics,
// check_pairing): a row's found set passes idx if it is the truth's or a near-tie of the scores
// (router::selection_consistent, and exact ties to the lower index); weights are compared as
// order statistics and, where the sets agree, each against the truth's weight of its expert.
// truth rows in descending w; found rows in any order (sorted here).
void router_judge(TierReport& rep, int64_t E, int64_t K, std::span<const int32_t> truth_i,
                  std::span<const float> truth_w, std::vector<int32_t> found_i, std::vector<float> found_w,
                  const RouterBounds& b);

}  // namespace moe
