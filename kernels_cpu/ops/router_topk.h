// router_topk: the Qwen3.5/3.6 (and Qwen3-Next) MoE router: softmax over all experts ->
// top-K -> renormalise (docs/ops/moe.md "Softmax router", "Which K"; the softmax of
// docs/ops/README.md "Scalar helpers"; HF `Qwen3_5MoeSparseMoeBlock` router: softmax in fp32,
// torch.topk, w / sum(w)).
//
// Shape contract:
//   logits [T, E] f32, row-major      router logits (mlp.gate · h_post) per token
//   idx    [T, K] int32               chosen experts, distinct, in [0, E)
//   w      [T, K] f32                 their weights; sum to 1 when renormalize
//   K = p.k: the architectural top-K (A17B 10, A3B 8) or an engine's K (4), 1 <= K <= E.
// Math: p = softmax(logits) over all E (max by strict `>`, e_i = exp(x_i - m) stored while
// summing in index order, p_i = e_i * (1/sum)); S = the K largest p, ties to the LOWEST expert
// index; w_e = p_e * (1/sum_{j in S} p_j) if renormalize, else p_e.
// Output order, every tier: descending w, ties by ascending expert index (deterministic; the
// engines differ in slot order, docs/ops/verification.md "Top-K slot order", so slot order is not
// part of the contract).
// f32 tier: reproduces CPU-C `cpu_topk` weights bit for bit: the renormalisation sum runs over
// the engine's K slots in slot order (slots start at -1e30; each p_i replaces the first
// smallest slot iff p_i > it). The engine's first-smallest-slot rule can keep a later index
// on an exact tie at the K-th place (p = [a, a, b > a], K = 2 keeps {2, 1}); we choose the
// lowest index instead. Tied experts have equal p, so the slot values, the sum and the
// weights are unchanged: only which of two equal-weight experts is named differs.
// NaN: a token whose softmax is undefined (a NaN logit, a +inf logit, or all logits -inf) gets
// idx = -1 ("no expert") and w = NaN in all K places, in every tier, so a NaN never silently
// routes to an expert (the engines' slot scan would pick expert 0 with garbage weights).
// Consumers must reject or skip idx -1. Other tokens are unaffected.
#pragma once
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace moe {

struct RouterTopkParams {
  int64_t tokens = 1;
  int64_t experts = 0;
  int64_t k = 0;
  bool renormalize = true;
  template <class F>
  void visit(F&& f) const {
    f("tokens", tokens), f("experts", experts), f("k", k), f("renormalize", renormalize);
  }
};

template <class Acc>
void router_topk_ref(const RouterTopkParams& p, std::span<const float> logits, std::span<int32_t> idx,
                     std::span<float> w);
void router_topk_fast(const RouterTopkParams& p, std::span<const float> logits, std::span<int32_t> idx,
                      std::span<float> w);

// Shared by every tier: argument validation with messages naming the op.
void router_topk_validate(const RouterTopkParams& p, std::span<const float> logits, std::span<int32_t> idx,
                          std::span<float> w);

// Helpers shared by the two routers (router_topk, router_noaux).
namespace router {

// The K largest of v[0..n) (no NaN), ties to the lowest index, written to out[0..K) in
// descending order: K passes of "largest not yet taken" with strict `>` (VK `cpu_topk`).
// O(n K) and plain on purpose: this is the reference selection.
template <class T>
void topk_lowest_index(const T* v, int64_t n, int64_t k, int32_t* out) {
  std::vector<char> taken(n, 0);
  for (int64_t j = 0; j < k; ++j) {
    int64_t best = -1;
    for (int64_t i = 0; i < n; ++i) {
      if (!taken[i] && (best < 0 || v[i] > v[best])) best = i;
    }
    taken[best] = 1;
    out[j] = int32_t(best);
  }
}

// The output of a token whose scores are undefined (NaN): no expert, NaN weights.
inline void fill_nan_row(int32_t* idx, float* w, int64_t k) {
  for (int64_t j = 0; j < k; ++j) idx[j] = -1, w[j] = std::numeric_limits<float>::quiet_NaN();
}

// Reorders the K pairs (idx, w) of one token to the output order: w descending, ties by
// ascending index (insertion sort: K <= a few dozen). No NaN here (NaN rows are filled apart).
inline void sort_by_weight(int32_t* idx, float* w, int64_t k) {
  for (int64_t i = 1; i < k; ++i) {
    const int32_t ii = idx[i];
    const float wi = w[i];
    int64_t j = i;
    for (; j > 0 && (w[j - 1] < wi || (w[j - 1] == wi && idx[j - 1] > ii)); --j) idx[j] = idx[j - 1], w[j] = w[j - 1];
    idx[j] = ii, w[j] = wi;
  }
}

// Check helper: is `chosen` (k distinct ids among `candidates`) a legitimate top-k of values
// known only to within +-bound? It is iff some values inside the intervals make it a top-k:
// min over chosen of (v + bound) >= max over the other candidates of (v - bound).
// v and bound are indexed by id; candidates lists the ids competing (all, or a kept group's).
bool selection_consistent(std::span<const int32_t> chosen, std::span<const int32_t> candidates,
                          std::span<const double> v, std::span<const double> bound);

}  // namespace router
}  // namespace moe
