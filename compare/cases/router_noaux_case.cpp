#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <string>

#include "compare/cases/bound_mode.h"
#include "compare/cases/case_util.h"
#include "compare/cases/instances.h"
#include "compare/decide/precision.h"
#include "core/math.h"
#include "core/rng.h"
#include "ops/router_noaux.h"

namespace moe::compare {
namespace {

enum class Data { Gaussian, NegativeBias, Ties, NearTies, NonFinite, AllEqual };

constexpr double kInf = std::numeric_limits<double>::infinity();

// Per-expert errors of a kernel under the Vulkan precision rules, first order in u = 2^-24,
// against the exact (f64) s and c:
//   s = 1 / (1 + exp(-x)) (or exp(x) / (1 + exp(x)) for x < 0, same bound): exp (3 + 2|x| ULP =
//   (6 + 4|x|)u) carried through 1 + t scaled by t / (1 + t) <= 1, the addition u, the
//   division 2.5 ULP = 5u: sigma_rel = (12 + 4|x|)u, plus the smallest normal (flushed s).
//   +-inf logits: s = 1 or 0 exactly (the op's math; exp(+-inf) is not bounded by the rules).
//   c = s + bias: + u |c|.
struct Err {
  std::vector<double> s, c, sig_rel, beta_c;
};

Err errors(const float* x, const float* bias, int64_t E) {
  Err r;
  for (int64_t e = 0; e < E; ++e) {
    const double s = sigmoid(double(x[e])), c = s + double(bias[e]);
    const double rel = std::isinf(x[e]) ? 0.0 : exp_rel(double(x[e])) + division_rel() + kU32;
    r.s.push_back(s), r.c.push_back(c), r.sig_rel.push_back(rel);
    r.beta_c.push_back(s * rel + kMinNormal32 + kU32 * std::fabs(c));
  }
  return r;
}

// Group scores G_g = top1 + top2 of c and their bound: top-2 sums are 1-Lipschitz in each
// score, so 2 max_g beta_c, plus u |G| for the addition.
void group_scores(const Err& r, int64_t NG, int64_t GS, std::vector<double>& G, std::vector<double>& bG) {
  G.assign(size_t(NG), 0.0), bG.assign(size_t(NG), 0.0);
  for (int64_t g = 0; g < NG; ++g) {
    double t1 = -kInf, t2 = -kInf, worst = 0;
    for (int64_t e = g * GS; e < (g + 1) * GS; ++e) {
      const double v = r.c[size_t(e)];
      if (v > t1) {
        t2 = t1, t1 = v;
      } else if (v > t2) {
        t2 = v;
      }
      worst = std::max(worst, r.beta_c[size_t(e)]);
    }
    G[size_t(g)] = t1 + t2, bG[size_t(g)] = 2 * worst + kU32 * std::fabs(t1 + t2);
  }
}

// The (logit, bias) bits of a group's two largest c: groups with equal signatures have
// bit-identical computed scores on any device (same inputs, same operations), so their exact
// tie is decided by the group index everywhere.
std::vector<uint64_t> signature(const float* x, const float* bias, const Err& r, int64_t g, int64_t GS) {
  std::vector<int64_t> ids;
  for (int64_t e = g * GS; e < (g + 1) * GS; ++e) ids.push_back(e);
  std::stable_sort(ids.begin(), ids.end(), [&](int64_t a, int64_t b) { return r.c[size_t(a)] > r.c[size_t(b)]; });
  std::vector<uint64_t> sig;
  for (int j = 0; j < 2; ++j)
    sig.push_back(uint64_t(std::bit_cast<uint32_t>(x[ids[size_t(j)]])) << 32 | std::bit_cast<uint32_t>(bias[ids[size_t(j)]]));
  return sig;
}

// decide_indices judges near-ties between experts, not between groups (metrics.h: a group-level
// near-tie fails, conservatively). A correct f32 kernel may keep either of two groups whose
// scores agree within their bounds, so the inputs must not hold such a pair at the kept
// boundary: a dropped group within the bounds of a kept one (other than an exact tie of
// identical signatures, decided by index everywhere) has its logits lowered by 2 (its score
// drops by ~0.2, far beyond ~1e-6 bounds) until none is left.
void separate_groups(const RouterNoauxParams& p, float* x, const float* bias) {
  const int64_t E = p.experts, NG = p.n_group, GS = E / NG;
  if (p.topk_group == NG) return;
  for (int iter = 0; iter < 64; ++iter) {
    const Err r = errors(x, bias, E);
    std::vector<double> G, bG;
    group_scores(r, NG, GS, G, bG);
    std::vector<int32_t> order(static_cast<size_t>(NG));
    router::topk_lowest_index(G.data(), NG, NG, order.data());
    bool changed = false;
    for (int64_t j = p.topk_group; j < NG; ++j) {
      const int64_t h = order[size_t(j)];
      for (int64_t i = 0; i < p.topk_group && !changed; ++i) {
        const int64_t g = order[size_t(i)];
        if (G[size_t(g)] - bG[size_t(g)] > G[size_t(h)] + bG[size_t(h)]) continue;
        if (signature(x, bias, r, g, GS) == signature(x, bias, r, h, GS)) continue;
        for (int64_t e = h * GS; e < (h + 1) * GS; ++e) x[e] -= 2.0f;
        changed = true;
      }
    }
    if (!changed) return;
  }
}

// Gate logits ~ N(0, 1.5^2), bias ~ U(-0.1, 0.1) (kernels_cpu/check/router_noaux_check.cpp);
// NegativeBias: bias ~ -0.9 (where masking with 0.0 instead of -inf would differ); Ties: logits on
// a 1/4 grid, bias 0 (exactly equal c inside groups and exactly equal group scores);
// NearTies: the grid plus N(0, 1e-6); AllEqual: one grid value per token, bias 0 (every expert
// and group ties: every engine takes the lowest indices); NonFinite: token 0 a NaN logit (signalling, negative), token 1 a +inf and a
// -inf logit (ordinary: s = 1 and 0), token 2 a NaN late in the row, token 3 every logit -inf.
std::vector<float> make_logits(const RouterNoauxParams& p, Data d, Rng rng, std::vector<float>& bias) {
  const int64_t T = p.tokens, E = p.experts;
  std::vector<float> x = rng.fork(1).normal_vec(T * E, 1.5);
  Rng noise = rng.fork(2);
  for (float& v : x) {
    if (d == Data::Ties || d == Data::NearTies) v = std::round(v * 4.0f) / 4.0f;
    if (d == Data::NearTies) v += float(1e-6 * noise.normal());
  }
  if (d == Data::AllEqual)  // every c of a row equal (a grid value per token): all experts and groups tie
    for (int64_t t = 0; t < T; ++t) std::fill_n(x.begin() + t * E, E, std::round(x[size_t(t * E)] * 4.0f) / 4.0f);
  if (d == Data::Ties || d == Data::NearTies || d == Data::AllEqual) {
    bias.assign(size_t(E), 0.0f);
  } else if (d == Data::NegativeBias) {
    bias = rng.fork(3).uniform_vec(E, -0.95f, -0.85f);
  } else {
    bias = rng.fork(3).uniform_vec(E, -0.1f, 0.1f);
  }
  if (d == Data::NonFinite) {
    const float inf = std::numeric_limits<float>::infinity();
    // Token 0's NaN is the negative one of the lowest payload (bits 0xFF800001, a signalling
    // NaN): a NaN test by bits that misses the lowest payload or the sign takes it for a number.
    x[size_t(noise.below(E))] = std::bit_cast<float>(0xFF800001u);
    // Token 1: -inf at a random expert, then +inf at its largest logit (so that its group is
    // the best and the +inf expert is chosen: its s = 1 reaches the weights).
    if (T > 1) {
      x[size_t(E + noise.below(E))] = -inf;
      x[size_t(E + (std::max_element(x.begin() + E, x.begin() + 2 * E) - (x.begin() + E)))] = inf;
    }
    if (T > 2) x[size_t(3 * E - 1)] = std::numeric_limits<float>::quiet_NaN();
    // Token 3: every logit -inf: s = 0 everywhere, c = bias, and the chosen sum of s is exactly
    // 0 (the op's weights are then 0, not 0 / 0).
    if (T > 3) std::fill(x.begin() + 3 * E, x.begin() + 4 * E, -inf);
  }
  for (int64_t t = 0; t < T; ++t) {
    float* xr = x.data() + t * E;
    if (std::none_of(xr, xr + E, [](float v) { return std::isnan(v); })) separate_groups(p, xr, bias.data());
  }
  return x;
}

// Weight bounds per slot: order statistics over the candidates (see router_topk_case.cpp; the
// same argument). The contract orders slots by the kernel's computed w (descending, ties by
// ascending index); the truth row is re-sorted to that order. Candidates C = the truth's set S
// plus the entrants A: kept-group experts outside S that the near-tie rule could accept
// (c_a + beta_a >= min over S of c_i - beta_i). An entrant's s may be far from the s of the
// expert it displaces (their biases differ): the bounds widen only on such rows.
//   Not renormalised: w = s * rsf: rho = sigma_rel + u.
//   Renormalised: w = s / sum_F s * rsf: the sum carries max_C sigma_rel + gamma_K, the division
//   5u, the scaling u: rho_c = sigma_rel_c + max_C sigma_rel + gamma_K + 6u; sum_F s lies between
//   the sums of the K smallest and the K largest s of C. Flushed s (the smallest normal each)
//   add (K + 1) kMinNormal rsf / sum_lo.
std::vector<double> weight_bounds(const Err& r, const std::vector<int32_t>& S, const std::vector<int32_t>& cand,
                                  const float* T, int64_t K, bool renorm, double rsf) {
  double min_s = kInf;
  for (int32_t e : S) min_s = std::min(min_s, r.c[size_t(e)] - r.beta_c[size_t(e)]);
  std::vector<int32_t> C = S;
  for (int32_t e : cand)
    if (std::find(S.begin(), S.end(), e) == S.end() && r.c[size_t(e)] + r.beta_c[size_t(e)] >= min_s) C.push_back(e);
  const size_t n_a = C.size() - S.size();
  std::vector<double> sc, lo, hi;
  double rel_max = 0;
  for (int32_t e : C) sc.push_back(r.s[size_t(e)]), rel_max = std::max(rel_max, r.sig_rel[size_t(e)]);
  std::sort(sc.begin(), sc.end());
  double sum_lo = 0, sum_hi = 0;
  for (int64_t j = 0; j < K; ++j) sum_lo += sc[size_t(j)], sum_hi += sc[sc.size() - 1 - size_t(j)];
  for (int32_t e : C) {
    const double s = r.s[size_t(e)];
    if (!renorm) {
      const double rho = r.sig_rel[size_t(e)] + kU32;
      lo.push_back(s * rsf * (1 - rho) - 2 * kMinNormal32), hi.push_back(s * rsf * (1 + rho) + 2 * kMinNormal32);
    } else if (sum_lo > 0) {
      const double rho = r.sig_rel[size_t(e)] + rel_max + sum_gamma(double(K)) + 6 * kU32;
      const double flush = double(K + 1) * kMinNormal32 * rsf / sum_lo + kMinNormal32;
      lo.push_back(s / sum_hi * rsf * (1 - rho) - flush), hi.push_back(s / sum_lo * rsf * (1 + rho) + flush);
    } else {
      lo.push_back(0.0), hi.push_back(s > 0 ? kInf : 0.0);  // not in the cases: every set has s > 0
    }
  }
  std::sort(lo.begin(), lo.end(), std::greater<>()), std::sort(hi.begin(), hi.end(), std::greater<>());
  std::vector<double> b(static_cast<size_t>(K));
  for (int64_t j = 0; j < K; ++j)
    b[size_t(j)] = std::max({hi[size_t(j)] - double(T[j]), double(T[j]) - lo[size_t(j) + n_a], 0.0});
  return b;
}

}  // namespace

OpCase router_noaux_instance(const std::string& label, uint64_t seed, const RouterNoauxParams& p,
                             std::span<const float> x, std::span<const float> bias) {
  const int64_t T = p.tokens, E = p.experts, K = p.k, NG = p.n_group, TG = p.topk_group;
  const bool renorm = p.renormalize;
  const float rsf = p.routed_scaling_factor;
  OpCase c = new_case("router_noaux", label, seed);
  set_vars(c, p);
  std::vector<int32_t> idx(size_t(T * K));
  std::vector<float> w(size_t(T * K));
  router_noaux_ref<double>(p, x, bias, idx, w);

  const int64_t GS = E / NG;
  OutputSpec si, sw;
  si.name = "idx", si.kind = Kind::Indices, si.row = K;
  si.scores.assign(size_t(T * E), 0.0), si.score_bound.assign(size_t(T * E), 0.0);
  sw.name = "w", sw.kind = Kind::Reduction, sw.bound.assign(size_t(T * K), 0.0);
  sw.paired_with = "idx", sw.row = K;  // each weight must belong to its expert
  for (int64_t t = 0; t < T; ++t) {
    int32_t* it = idx.data() + t * K;
    float* wt = w.data() + t * K;
    if (it[0] < 0) continue;  // NaN token: -1 and NaN, matched exactly
    // The contract's slot order: w descending, ties by ascending expert.
    std::vector<std::pair<float, int32_t>> pairs;
    for (int64_t j = 0; j < K; ++j) pairs.push_back({wt[j], it[j]});
    std::sort(pairs.begin(), pairs.end(), [](auto a, auto b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
    for (int64_t j = 0; j < K; ++j) wt[j] = pairs[size_t(j)].first, it[j] = pairs[size_t(j)].second;

    const Err r = errors(x.data() + t * E, bias.data(), E);
    std::vector<double> G, bG;
    group_scores(r, NG, GS, G, bG);
    std::vector<int32_t> kept(static_cast<size_t>(TG)), cand;
    router::topk_lowest_index(G.data(), NG, TG, kept.data());
    for (int64_t e = 0; e < E; ++e) si.scores[size_t(t * E + e)] = -kInf;
    for (int32_t g : kept)
      for (int64_t e = g * GS; e < (g + 1) * GS; ++e) {
        si.scores[size_t(t * E + e)] = r.c[size_t(e)], si.score_bound[size_t(t * E + e)] = r.beta_c[size_t(e)];
        cand.push_back(int32_t(e));
      }
    const std::vector<double> b = weight_bounds(r, std::vector<int32_t>(it, it + K), cand, wt, K, renorm, double(rsf));
    std::copy(b.begin(), b.end(), sw.bound.begin() + t * K);
  }
  c.tensors["logits"] = f32_tensor(x);
  c.tensors["bias"] = f32_tensor(bias);
  c.tensors["idx"] = output_i32(T * K);
  c.tensors["w"] = output_f32(T * K);
  c.outputs["idx"] = si;
  c.truth["idx"] = std::vector<double>(idx.begin(), idx.end());
  c.outputs["w"] = sw;
  c.truth["w"] = widen(w);
  return c;
}

namespace {

OpCase noaux_case(const std::string& label, int64_t T, int64_t E, int64_t K, int64_t NG, int64_t TG, float rsf,
                  bool renorm, Data d, uint64_t seed) {
  RouterNoauxParams p;
  p.tokens = T, p.experts = E, p.k = K, p.n_group = NG, p.topk_group = TG, p.routed_scaling_factor = rsf;
  p.renormalize = renorm;
  std::vector<float> bias;
  const std::vector<float> x = make_logits(p, d, Rng(seed), bias);
  return router_noaux_instance(label, seed, p, x, bias);
}

}  // namespace

std::vector<OpCase> router_noaux_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  if (rem) {
    struct Shape {
      int64_t E, K, NG, TG;
    };
    // One group (plain top-K), groups of 2, every group kept, K = all kept experts, odd groups.
    for (const Shape s : {Shape{2, 1, 1, 1}, Shape{6, 2, 3, 2}, Shape{8, 8, 4, 4}, Shape{33, 7, 3, 1},
                          Shape{66, 10, 6, 3}, Shape{300, 16, 10, 4}}) {
      const std::string l = "remainder E " + std::to_string(s.E) + " K " + std::to_string(s.K) + " groups " +
                             std::to_string(s.NG) + "/" + std::to_string(s.TG);
      const uint64_t sd = seed + uint64_t(100 * s.E + s.K);
      out.push_back(noaux_case(l, 5, s.E, s.K, s.NG, s.TG, 2.5f, true, Data::Gaussian, sd));
      out.push_back(noaux_case(l + " ties", 5, s.E, s.K, s.NG, s.TG, 1.0f, s.K % 2 == 0, Data::Ties, sd + 1));
    }
    // All tied (an all-equal input hides an ordering bug from random data), more experts than lanes.
    out.push_back(noaux_case("remainder E 300 K 16 groups 10/4 all equal", 2, 300, 16, 10, 4, 1.0f, true, Data::AllEqual, seed + 15));
    out.push_back(noaux_case("remainder E 1032 K 17 groups 8/4 all equal", 2, 1032, 17, 8, 4, 1.0f, false, Data::AllEqual, seed + 16));
    out.push_back(noaux_case("remainder E 32 NaN/inf tokens", 4, 32, 4, 4, 2, 2.5f, true, Data::NonFinite, seed + 9));
    // The NaN token last (T 3: token 2's NaN): a NaN path writing one slot too many writes
    // past idx and w (guard), where a following token's workgroup would overwrite it.
    out.push_back(noaux_case("remainder E 32 NaN token last", 3, 32, 4, 4, 2, 2.5f, true, Data::NonFinite, seed + 13));
    // More experts than 256 and 512 (groups of 129) and K above 10 and 16: the shared arrays
    // and top-K registers engines size for DeepSeek-V3; one token (decode) and five.
    out.push_back(noaux_case("remainder E 1032 K 17 groups 8/4", 5, 1032, 17, 8, 4, 2.5f, true, Data::Gaussian, seed + 10));
    out.push_back(noaux_case("remainder T 1 E 1032 K 17 groups 8/4", 1, 1032, 17, 8, 4, 2.5f, true, Data::Gaussian, seed + 11));
    // K = 64, the kernel's most (MAX_K): its chosen / weight arrays full.
    out.push_back(noaux_case("remainder E 256 K 64 groups 8/4", 2, 256, 64, 8, 4, 2.5f, true, Data::Gaussian, seed + 14));
    out.push_back(noaux_case("remainder T 1 E 2048 K 12 groups 16/5 ties", 1, 2048, 12, 16, 5, 1.0f, false, Data::Ties, seed + 12));
  }
  if (real) {
    // DeepSeek-V3 / Cogito-V2: 256 experts, 8 groups, 4 kept, top-8, scaling 2.5.
    const int64_t E = 256, K = 8, NG = 8, TG = 4;
    out.push_back(noaux_case("DeepSeek-V3 decode", 1, E, K, NG, TG, 2.5f, true, Data::Gaussian, seed));
    out.push_back(noaux_case("DeepSeek-V3 64 tokens", 64, E, K, NG, TG, 2.5f, true, Data::Gaussian, seed + 1));
    out.push_back(noaux_case("DeepSeek-V3 64 tokens bias -0.9", 64, E, K, NG, TG, 2.5f, true, Data::NegativeBias, seed + 2));
    out.push_back(noaux_case("DeepSeek-V3 64 tokens ties", 64, E, K, NG, TG, 2.5f, true, Data::Ties, seed + 3));
    out.push_back(noaux_case("DeepSeek-V3 64 tokens near-ties", 64, E, K, NG, TG, 2.5f, true, Data::NearTies, seed + 4));
    out.push_back(noaux_case("DeepSeek-V3 64 tokens not renormalised", 64, E, K, NG, TG, 2.5f, false, Data::Gaussian, seed + 5));
  }
  return out;
}

}  // namespace moe::compare
