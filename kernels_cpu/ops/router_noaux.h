// router_noaux: the DeepSeek-V3 `noaux_tc` MoE router (Cogito-V2; docs/ops/moe.md "noaux_tc router";
// the truth is HF 5.17 `DeepseekV3TopkRouter` and the official
// `Gate` of deepseek-ai/DeepSeek-V3 inference/model.py).
//
// Shape contract:
//   logits [T, E] f32, row-major      gate logits (mlp.gate · h_post, computed in f32)
//   bias   [E] f32                    e_score_correction_bias (selection only); must be finite
//   idx    [T, K] int32               chosen experts, distinct, in [0, E)
//   w      [T, K] f32                 their weights; sum to routed_scaling_factor when renormalize
//   E % n_group == 0, E / n_group >= 2 (a group's score is its top-2 sum),
//   1 <= topk_group <= n_group, 1 <= K <= topk_group * E / n_group (the kept experts).
// Math: s_e = sigmoid(logit_e) = 1 / (1 + exp(-logit_e)) (the engines' form, docs/ops/README.md "Scalar helpers");
// c_e = s_e + bias_e; group score G_g = top1 + top2 of c over the contiguous experts
// [g E/n_group, (g+1) E/n_group); the topk_group largest G are kept (ties to the lower group
// index); experts of the other groups get c = -inf; idx = the K largest c (ties to the lower
// expert index); w_k = s_{idx_k} / sum_j s_{idx_j} (if renormalize, else s_{idx_k}), then
// w_k = w_k * routed_scaling_factor. Output order, every tier: descending c, ties by ascending
// expert index.
// Masking: -inf, as HF 5.17 and the official code (and MFR); mlx-lm and older HF use 0.0, which
// lets a dropped group's expert beat kept experts whose c = s + bias < 0 (bias ~ -0.9;
// docs/ops/verification.md "noaux_tc group masking"). We do -inf: every chosen expert lies in a kept group.
// Renormalisation: the official code's sum, without HF's "+ 1e-20" in the denominator. They
// differ only when the chosen sum of s is below ~1e-13 (1e-20 < half an f32 ulp of any larger
// sum), i.e. when all K chosen logits are below about -30. If that sum is exactly 0 (every
// chosen sigmoid underflowed) the weights are 0, which is what HF's +1e-20 gives.
// f32 tier order: s = 1.0f / (1.0f + expf(-x)); c = s + bias; G = top1 + top2; sum of the
// chosen s in output order; w = (s / sum) * routed_scaling_factor (HF's fp32 order: divide,
// then scale).
// NaN: a token with a NaN logit gets idx = -1 ("no expert") and w = NaN in all K places, in
// every tier (a NaN c can neither be ranked nor silently dropped). +-inf logits are ordinary
// (s = 1 or 0). A non-finite bias is a bad argument (an error), not data.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>

#include "core/math.h"
#include "ops/router_topk.h"  // router::topk_lowest_index, router::selection_consistent

namespace moe {

struct RouterNoauxParams {
  int64_t tokens = 1;
  int64_t experts = 0;
  int64_t k = 0;
  int64_t n_group = 1;
  int64_t topk_group = 1;
  float routed_scaling_factor = 1.0f;
  bool renormalize = true;
  // Convention (GPU kernels only; the CPU tiers always return descending c): the order of a
  // kernel's K output slots. 0: by weight, descending, ties by ascending expert (the bundled
  // kernels); 1: by the biased score c, descending (the official DeepSeek-V3 top-k, ggml's
  // topk_moe). The (expert, weight) pairs are the same; MoE combine sums over slots.
  int64_t slot_order = 0;
  template <class F>
  void visit(F&& f) const {
    f("tokens", tokens), f("experts", experts), f("k", k), f("n_group", n_group), f("topk_group", topk_group),
        f("routed_scaling_factor", routed_scaling_factor), f("renormalize", renormalize);
    visit_conventions(*this, f);
  }
  // The convention fields alone (a manifest's "conventions" sets them; Self may be const).
  template <class Self, class F>
  static void visit_conventions(Self& s, F&& f) {
    f("slot_order", s.slot_order);
  }
};

template <class Acc>
void router_noaux_ref(const RouterNoauxParams& p, std::span<const float> logits, std::span<const float> bias,
                      std::span<int32_t> idx, std::span<float> w);
void router_noaux_fast(const RouterNoauxParams& p, std::span<const float> logits, std::span<const float> bias,
                       std::span<int32_t> idx, std::span<float> w);

// Shared by every tier: argument validation with messages naming the op.
void router_noaux_validate(const RouterNoauxParams& p, std::span<const float> logits, std::span<const float> bias,
                           std::span<int32_t> idx, std::span<float> w);

namespace router {

// One token's scores in T, shared by every tier: s = sigmoid(x) (the weights) and c = s + bias
// (the selection score). When some c is NaN the token gets no expert: its K slots (idx, w) are
// filled as such and the result is false.
template <class T>
bool noaux_scores(const float* x, std::span<const float> bias, T* s, T* c, int32_t* idx, float* w, int64_t k) {
  bool has_nan = false;
  for (size_t e = 0; e < bias.size(); ++e) {
    s[e] = sigmoid(T(x[e]));
    c[e] = s[e] + T(bias[e]);
    has_nan |= std::isnan(c[e]);
  }
  if (has_nan) fill_nan_row(idx, w, k);
  return !has_nan;
}

// Each group's score: the sum of its two largest c (values: which of two equal ones is moot).
template <class T>
void noaux_group_scores(const T* c, int64_t n_group, int64_t group_size, T* score) {
  const T neg_inf = -std::numeric_limits<T>::infinity();
  for (int64_t g = 0; g < n_group; ++g) {
    T top1 = neg_inf, top2 = neg_inf;
    for (int64_t e = g * group_size; e < (g + 1) * group_size; ++e) {
      top2 = c[e] > top1 ? top1 : (c[e] > top2 ? c[e] : top2);
      top1 = c[e] > top1 ? c[e] : top1;
    }
    score[g] = top1 + top2;
  }
}

}  // namespace router
}  // namespace moe
