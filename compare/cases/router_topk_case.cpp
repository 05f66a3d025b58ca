#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <string>

#include "compare/cases/bound_mode.h"
#include "compare/cases/case_util.h"
#include "compare/decide/precision.h"
#include "compare/cases/instances.h"
#include "core/rng.h"
#include "ops/router_topk.h"

namespace moe::compare {
namespace {

enum class Data { Gaussian, Ties, NearTies, NonFinite, AllEqual };

// Router logits ~ N(0, 2^2) (kernels_cpu/check/router_topk_check.cpp). Ties: on a grid of 1/4,
// so exactly equal logits (equal p) are common at the K-th place. NearTies: the grid plus
// N(0, 1e-6): p differing by about a kernel's rounding error. NonFinite: token 0 has some -inf
// logits (still valid), token 1 a NaN (bits 0xFF800001), token 2 a +inf, token 3 all -inf (each undefined: -1/NaN).
std::vector<float> make_logits(int64_t T, int64_t E, Data d, Rng rng) {
  std::vector<float> x = rng.fork(1).normal_vec(T * E, 2.0);
  Rng noise = rng.fork(2);
  const float inf = std::numeric_limits<float>::infinity();
  for (float& v : x) {
    if (d == Data::Ties || d == Data::NearTies) v = std::round(v * 4.0f) / 4.0f;
    if (d == Data::NearTies) v += float(1e-6 * noise.normal());
  }
  if (d == Data::AllEqual) {
    // Every expert of a row ties: even tokens one grid value, odd tokens -0.0 and +0.0 in turn
    // (equal p): every engine takes experts 0..K-1, so any other tie-break shows.
    for (int64_t t = 0; t < T; ++t)
      for (int64_t e = 0; e < E; ++e)
        x[size_t(t * E + e)] = t % 2 ? (e % 2 ? 0.0f : -0.0f) : std::round(x[size_t(t * E)] * 4.0f) / 4.0f;
  }
  if (d == Data::NonFinite) {
    for (int64_t e = 0; e + 1 < E; e += 3) x[size_t(e)] = -inf;
    // Negative, lowest payload (a signalling NaN): a NaN test by bits that misses either takes
    // it for a number.
    if (T > 1) x[size_t(E + E / 2)] = std::bit_cast<float>(0xFF800001u);
    if (T > 2) x[size_t(2 * E)] = inf;
    if (T > 3) std::fill(x.begin() + 3 * E, x.begin() + 4 * E, -inf);
  }
  return x;
}

// The kernel's possible error on each probability p_e, under the Vulkan precision rules, first
// order in u = 2^-24 (one ULP of a value is at most 2u of it), against the truth's P_e (the f64
// softmax rounded once to f32, within u P_e of the exact p_e):
//   m = max logit: exact. d = x_e - m rounds once: exp's value moves by u |d| (relative).
//   exp(d): 3 + 2|d| ULP = (6 + 4|d|)u. A kernel forming exp2(d * log2e) instead: the f32
//   constant and the product 2u|d| on the argument (as |d| u relative on the value), exp2's
//   3 + 2|d| log2e ULP = (6 + 5.78|d|)u: (6 + 8.8|d|)u in all. delta_e = exp_rel(1.4427|d|)
//   + 3u|d| covers both (decide/precision.h: the rules' figures here, or the device's budgets).
//   The sum over E (any order): gamma_E plus the weighted mean sum_e P_e delta_e of its terms'
//   errors, plus E 2^-126 for exponentials flushed to zero (the sum is >= 1): eta, common to all e.
//   p = e / sum (2.5 ULP = 5u) or e * (1/sum) (5u common + u): 5u per element and 5u common.
//   a_e = delta_e + 5u + u (P's own rounding): the part of p_e's error not common to all experts.
//   beta_e = P_e (a_e + eta + 5u) + 2 kMinNormal (a flushed e and a flushed product).
// -inf logits: p = 0 exactly (the op's math; a kernel must not trust exp(-inf), which the rules
// leave unbounded), so only the absolute term. These beta are the near-tie rule's score_bound.
struct RowErr {
  std::vector<double> P, beta, a;
};

RowErr row_errors(const float* x, const double* P, int64_t E) {
  const double u = kU32;
  RowErr r;
  r.P.assign(P, P + E), r.beta.resize(size_t(E)), r.a.resize(size_t(E));
  const double m = *std::max_element(x, x + E);
  double eta = sum_gamma(double(E)) + double(E) * kMinNormal32;
  std::vector<double> delta(static_cast<size_t>(E));
  for (int64_t e = 0; e < E; ++e) {
    const double d = double(x[e]) - m;
    delta[size_t(e)] = std::isinf(d) ? 0.0 : exp_rel(1.4427 * std::fabs(d)) + 3 * u * std::fabs(d);
    eta += P[e] * delta[size_t(e)];
  }
  for (int64_t e = 0; e < E; ++e) {
    r.a[size_t(e)] = std::isinf(double(x[e])) ? 0.0 : delta[size_t(e)] + division_rel() + u;
    r.beta[size_t(e)] = std::isinf(double(x[e])) ? 2 * kMinNormal32 : P[e] * (r.a[size_t(e)] + eta + division_rel()) + 2 * kMinNormal32;
  }
  return r;
}

// Weight bounds per slot. The contract orders slots by the kernel's own weights (descending,
// ties by ascending index), and the truth row is in the same order, so slot j of both is the
// j-th largest weight: compared by order statistic, which is sound when a near-tie puts another
// expert into the set or swaps the order of two close weights.
// Candidates C = S (the truth's K) plus the entrants A: the experts outside S that the near-tie
// rule could accept in the found set (P_a + beta_a >= min over S of P_i - beta_i; a set holding
// any other expert fails idx). Whatever set F (K of C) the kernel took, its computed weight of
// each c lies in [lo_c, hi_c] (below); the j-th largest of K values from C is then at most the
// j-th largest hi over C and at least the (j + |A|)-th largest lo over C. When A is empty (the
// usual row) this is exactly the j-th largest of S's intervals.
//   Not renormalised: w_c = p_c, within beta_c of P_c.
//   Renormalised: w_c = p_c / sum_F p. The common factor of all p (eta, the reciprocal)
//   cancels; the kernel's sum carries max_C a + gamma_K, its division 5u (or reciprocal and
//   product 6u), so rho_c = a_c + max_C a + gamma_K + 6u + u (the sum's P rounded to f32);
//   sum_F P lies between the sums of the K smallest and K largest P of C.
//   lo_c = P_c / sum_hi (1 - rho_c), hi_c = P_c / sum_lo (1 + rho_c), each +- 2 kMinNormal.
// The slot's bound is the larger distance from the truth's weight to those limits.
std::vector<double> weight_bounds(const RowErr& r, const int32_t* S, const float* T, int64_t K, bool renorm) {
  const int64_t E = int64_t(r.P.size());
  double min_s = std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < K; ++j) min_s = std::min(min_s, r.P[size_t(S[j])] - r.beta[size_t(S[j])]);
  std::vector<int32_t> C(S, S + K);
  for (int64_t e = 0; e < E; ++e)
    if (std::find(S, S + K, int32_t(e)) == S + K && r.P[size_t(e)] + r.beta[size_t(e)] >= min_s) C.push_back(int32_t(e));
  const size_t n_a = C.size() - size_t(K);
  std::vector<double> pc, lo, hi;
  double a_max = 0;
  for (int32_t c : C) pc.push_back(r.P[size_t(c)]), a_max = std::max(a_max, r.a[size_t(c)]);
  std::sort(pc.begin(), pc.end());
  double sum_lo = 0, sum_hi = 0;
  for (int64_t j = 0; j < K; ++j) sum_lo += pc[size_t(j)], sum_hi += pc[pc.size() - 1 - size_t(j)];
  for (int32_t c : C) {
    const double P = r.P[size_t(c)];
    if (!renorm) {
      lo.push_back(P - r.beta[size_t(c)]), hi.push_back(P + r.beta[size_t(c)]);
    } else {
      const double rho = r.a[size_t(c)] + a_max + sum_gamma(double(K)) + 7 * kU32;
      lo.push_back(P / sum_hi * (1 - rho) - 2 * kMinNormal32), hi.push_back(P / sum_lo * (1 + rho) + 2 * kMinNormal32);
    }
  }
  std::sort(lo.begin(), lo.end(), std::greater<>()), std::sort(hi.begin(), hi.end(), std::greater<>());
  std::vector<double> b(static_cast<size_t>(K));
  for (int64_t j = 0; j < K; ++j) {
    const double t = T[j];
    b[size_t(j)] = std::max({hi[size_t(j)] - t, t - lo[size_t(j) + n_a], 0.0});
  }
  return b;
}

OpCase topk_case(const std::string& label, int64_t T, int64_t E, int64_t K, bool renorm, Data d, uint64_t seed) {
  RouterTopkParams p;
  p.tokens = T, p.experts = E, p.k = K, p.renormalize = renorm;
  const std::vector<float> x = make_logits(T, E, d, Rng(seed));
  return router_topk_instance(label, seed, p, x);
}

}  // namespace

OpCase router_topk_instance(const std::string& label, uint64_t seed, const RouterTopkParams& p,
                            std::span<const float> x) {
  const int64_t T = p.tokens, E = p.experts, K = p.k;
  const bool renorm = p.renormalize;
  OpCase c = new_case("router_topk", label, seed);
  set_vars(c, p);
  std::vector<int32_t> idx(size_t(T * K));
  std::vector<float> w(size_t(T * K));
  router_topk_ref<double>(p, x, idx, w);
  // Every expert's probability: the op in f64 with K = E, not renormalised (slots by weight).
  const RouterTopkParams all{T, E, E, false};
  std::vector<int32_t> all_i(size_t(T * E));
  std::vector<float> all_w(size_t(T * E));
  router_topk_ref<double>(all, x, all_i, all_w);

  OutputSpec si, sw;
  si.name = "idx", si.kind = Kind::Indices, si.row = K;
  si.scores.assign(size_t(T * E), 0.0), si.score_bound.assign(size_t(T * E), 0.0);
  sw.name = "w", sw.kind = Kind::Reduction, sw.bound.assign(size_t(T * K), 0.0);
  sw.paired_with = "idx", sw.row = K;  // each weight must belong to its expert
  for (int64_t t = 0; t < T; ++t) {
    if (idx[size_t(t * K)] < 0) continue;  // undefined token: -1 and NaN, matched exactly
    std::vector<double> P(static_cast<size_t>(E));
    for (int64_t j = 0; j < E; ++j) P[size_t(all_i[size_t(t * E + j)])] = all_w[size_t(t * E + j)];
    const RowErr r = row_errors(x.data() + t * E, P.data(), E);
    std::copy(r.P.begin(), r.P.end(), si.scores.begin() + t * E);
    std::copy(r.beta.begin(), r.beta.end(), si.score_bound.begin() + t * E);
    const std::vector<double> b = weight_bounds(r, idx.data() + t * K, w.data() + t * K, K, renorm);
    std::copy(b.begin(), b.end(), sw.bound.begin() + t * K);
  }
  c.tensors["logits"] = f32_tensor(x);
  c.tensors["idx"] = output_i32(T * K);
  c.tensors["w"] = output_f32(T * K);
  c.outputs["idx"] = si;
  c.truth["idx"] = std::vector<double>(idx.begin(), idx.end());
  c.outputs["w"] = sw;
  c.truth["w"] = widen(w);
  return c;
}

std::vector<OpCase> router_topk_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  if (rem) {
    struct Shape {
      int64_t E, K;
    };
    // One expert; K = E; odd E below, at and above the 256 lanes; K = 64 (the kernel's most).
    for (const Shape s : {Shape{1, 1}, Shape{3, 2}, Shape{7, 7}, Shape{33, 5}, Shape{67, 33}, Shape{257, 64},
                          Shape{300, 10}}) {
      const std::string l = "remainder E " + std::to_string(s.E) + " K " + std::to_string(s.K);
      const uint64_t sd = seed + uint64_t(100 * s.E + s.K);
      out.push_back(topk_case(l, 5, s.E, s.K, true, Data::Gaussian, sd));
      out.push_back(topk_case(l + " ties", 5, s.E, s.K, s.K % 2 == 0, Data::Ties, sd + 1));
    }
    // Every expert tied (an all-equal input hides an ordering bug from random data): more
    // experts than lanes, so one lane scans several.
    out.push_back(topk_case("remainder E 300 K 10 all equal", 4, 300, 10, true, Data::AllEqual, seed + 9));
    out.push_back(topk_case("remainder E 1031 K 11 all equal", 2, 1031, 11, true, Data::AllEqual, seed + 10));
    out.push_back(topk_case("remainder E 33 K 5 NaN/inf tokens", 6, 33, 5, true, Data::NonFinite, seed + 7));
    // The all -inf (undefined) token last (T 4): a -1/NaN path writing one slot too many writes
    // past idx and w (guard), where a following token's workgroup would overwrite it.
    out.push_back(topk_case("remainder E 33 K 5 undefined token last", 4, 33, 5, true, Data::NonFinite, seed + 8));
    // More experts than 512 (and 1024, 2048) and K above the models' 10 and Metal's 16: engines
    // size their shared score arrays and top-K registers for the models they expect.
    for (const Shape s : {Shape{1031, 11}, Shape{2053, 17}}) {
      const std::string l = "remainder E " + std::to_string(s.E) + " K " + std::to_string(s.K);
      const uint64_t sd = seed + uint64_t(100 * s.E + s.K);
      out.push_back(topk_case(l, 5, s.E, s.K, true, Data::Gaussian, sd));
      out.push_back(topk_case(l + " ties", 5, s.E, s.K, false, Data::Ties, sd + 1));
      out.push_back(topk_case("remainder T 1 E " + std::to_string(s.E) + " K " + std::to_string(s.K), 1, s.E, s.K, true,
                              Data::Gaussian, sd + 2));
    }
  }
  if (real) {
    // Qwen3.5-397B-A17B: 512 experts, top-10; Qwen3.6-35B-A3B: 256, top-8; the engines' K = 4.
    struct Shape {
      const char* label;
      int64_t E, K;
    };
    for (const Shape& s : {Shape{"A17B", 512, 10}, Shape{"A17B engine K 4", 512, 4}, Shape{"A3B", 256, 8}}) {
      const uint64_t s0 = seed + uint64_t(10 * s.E + s.K);
      const std::string l = s.label;
      out.push_back(topk_case(l + " decode", 1, s.E, s.K, true, Data::Gaussian, s0));
      out.push_back(topk_case(l + " 64 tokens ties", 64, s.E, s.K, true, Data::Ties, s0 + 1));
      out.push_back(topk_case(l + " 64 tokens near-ties", 64, s.E, s.K, true, Data::NearTies, s0 + 2));
    }
    out.push_back(topk_case("A17B 64 tokens not renormalised", 64, 512, 10, false, Data::Gaussian, seed + 3));
    out.push_back(topk_case("A3B 64 tokens near-ties not renormalised", 64, 256, 8, false, Data::NearTies, seed + 4));
    out.push_back(topk_case("A17B 8 tokens NaN/inf", 8, 512, 10, true, Data::NonFinite, seed + 5));
  }
  return out;
}

}  // namespace moe::compare
