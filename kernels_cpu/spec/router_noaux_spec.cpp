#include "spec/router_noaux_spec.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <string>

#include "core/math.h"

namespace moe {
namespace {

// Per-expert errors of an implementation, first order in u, against the exact (f64) s and c:
//   s = 1 / (1 + exp(-x)) (or exp(x) / (1 + exp(x)) for x < 0, same bound): exp's m.exp_rel(x)
//   carried through 1 + t scaled by t / (1 + t) <= 1, the addition u, the division
//   m.division_rel: rel = exp_rel + division_rel + u, plus the smallest normal (flushed s).
//   +-inf logits: s = 1 or 0 exactly (the op's math; exp(+-inf) is not bounded by the rules).
//   c = s + bias: + u |c|. Unrenormalised weights s rsf: rel + u for the scaling.
RouterRowErr errors(const float* x, const float* bias, int64_t E, const PrecisionModel& m) {
  RouterRowErr r;
  r.floor = kMinNormal32;
  for (int64_t e = 0; e < E; ++e) {
    const double s = sigmoid(double(x[e])), c = s + double(bias[e]);
    const double rel = std::isinf(x[e]) ? 0.0 : m.exp_rel(double(x[e])) + m.division_rel + m.u;
    r.value.push_back(s), r.score.push_back(c), r.rel.push_back(rel), r.direct.push_back(rel + m.u);
    r.score_bound.push_back(s * rel + kMinNormal32 + m.u * std::fabs(c));
  }
  return r;
}

// Group scores G_g = top1 + top2 of c and their bound: top-2 sums are 1-Lipschitz in each
// score, so 2 max_g bound_c, plus u |G| for the addition.
void group_scores(const RouterRowErr& r, int64_t NG, int64_t GS, double u, std::vector<double>& G,
                  std::vector<double>& bG) {
  G.assign(size_t(NG), 0.0), bG.assign(size_t(NG), 0.0);
  for (int64_t g = 0; g < NG; ++g) {
    double t1 = -INFINITY, t2 = -INFINITY, worst = 0;
    for (int64_t e = g * GS; e < (g + 1) * GS; ++e) {
      const double v = r.score[size_t(e)];
      if (v > t1) {
        t2 = t1, t1 = v;
      } else if (v > t2) {
        t2 = v;
      }
      worst = std::max(worst, r.score_bound[size_t(e)]);
    }
    G[size_t(g)] = t1 + t2, bG[size_t(g)] = 2 * worst + u * std::fabs(t1 + t2);
  }
}

// The (logit, bias) bits of a group's two largest c: groups with equal signatures have
// bit-identical computed scores in any implementation (same inputs, same operations), so their
// exact tie is decided by the group index everywhere.
std::vector<uint64_t> signature(const float* x, const float* bias, const RouterRowErr& r, int64_t g, int64_t GS) {
  std::vector<int64_t> ids;
  for (int64_t e = g * GS; e < (g + 1) * GS; ++e) ids.push_back(e);
  std::stable_sort(ids.begin(), ids.end(),
                   [&](int64_t a, int64_t b) { return r.score[size_t(a)] > r.score[size_t(b)]; });
  std::vector<uint64_t> sig;
  for (int j = 0; j < 2; ++j)
    sig.push_back(uint64_t(std::bit_cast<uint32_t>(x[ids[size_t(j)]])) << 32 |
                  std::bit_cast<uint32_t>(bias[ids[size_t(j)]]));
  return sig;
}

// The near-tie rule judges experts, not groups (compare/decide/metrics.h: a group-level near-tie
// fails, conservatively). A correct implementation may keep either of two groups whose scores
// agree within their bounds, so the inputs must not hold such a pair at the kept boundary: a
// dropped group within the bounds of a kept one (other than an exact tie of identical
// signatures, decided by index everywhere) has its logits lowered by 2 (its score drops by
// ~0.2, far beyond ~1e-6 bounds) until none is left.
void separate_groups(const RouterNoauxParams& p, float* x, const float* bias, const PrecisionModel& m) {
  const int64_t E = p.experts, NG = p.n_group, GS = E / NG;
  if (p.topk_group == NG) return;
  for (int iter = 0; iter < 64; ++iter) {
    const RouterRowErr r = errors(x, bias, E, m);
    std::vector<double> G, bG;
    group_scores(r, NG, GS, m.u, G, bG);
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

void place_non_finite(const RouterNoauxParams& p, RouterData d, Rng& noise, std::vector<float>& x) {
  const int64_t T = p.tokens, E = p.experts;
  const float inf = std::numeric_limits<float>::infinity();
  if (d == RouterData::Nan)
    for (int64_t t = 0; t < T; t += 3) x[size_t(t * E + noise.below(E))] = NAN;
  if (d != RouterData::NonFinite) return;
  // Token 0's NaN is the negative one of the lowest payload (a signalling NaN): a NaN test by
  // bits that misses the lowest payload or the sign takes it for a number.
  x[size_t(noise.below(E))] = std::bit_cast<float>(0xFF800001u);
  // Token 1: -inf at a random expert, then +inf at its largest logit (so that its group is the
  // best and the +inf expert is chosen: its s = 1 reaches the weights).
  if (T > 1) {
    x[size_t(E + noise.below(E))] = -inf;
    x[size_t(E + (std::max_element(x.begin() + E, x.begin() + 2 * E) - (x.begin() + E)))] = inf;
  }
  if (T > 2) x[size_t(3 * E - 1)] = std::numeric_limits<float>::quiet_NaN();
  // Token 3: every logit -inf: s = 0 everywhere, c = bias, and the chosen sum of s is exactly 0
  // (the op's weights are then 0, not 0 / 0).
  if (T > 3) std::fill(x.begin() + 3 * E, x.begin() + 4 * E, -inf);
}

}  // namespace

RouterNoauxInputs router_noaux_inputs(const RouterNoauxParams& p, uint64_t seed, RouterData d,
                                      const PrecisionModel& m) {
  using D = RouterData;
  const int64_t T = p.tokens, E = p.experts;
  const Rng rng(seed);
  Rng noise(0);
  RouterNoauxInputs in{router_logits(T, E, 1.5, d, rng, noise), {}};
  std::vector<float>& x = in.logits;
  if (d == D::AllEqual)
    for (int64_t t = 0; t < T; ++t) std::fill_n(x.begin() + t * E, E, std::round(x[size_t(t * E)] * 4.0f) / 4.0f);
  if (d == D::Ties || d == D::NearTies || d == D::AllEqual) {
    in.bias.assign(size_t(E), 0.0f);
  } else {
    in.bias =
        d == D::NegativeBias ? rng.fork(3).uniform_vec(E, -0.95f, -0.85f) : rng.fork(3).uniform_vec(E, -0.1f, 0.1f);
  }
  place_non_finite(p, d, noise, x);
  if (d == D::Large)  // even tokens every expert, odd tokens every third: + 100
    for (int64_t t = 0; t < T; ++t)
      for (int64_t e = 0; e < E; e += t % 2 ? 3 : 1) x[size_t(t * E + e)] += 100.0f;
  for (int64_t t = 0; t < T; ++t) {
    float* xr = x.data() + t * E;
    if (std::none_of(xr, xr + E, [](float v) { return std::isnan(v); })) separate_groups(p, xr, in.bias.data(), m);
  }
  return in;
}

std::vector<RouterNoauxShape> router_noaux_shapes(bool remainders, bool real) {
  using D = RouterData;
  std::vector<RouterNoauxShape> out;
  auto add = [&](std::string label, int64_t T, int64_t E, int64_t K, int64_t NG, int64_t TG, float rsf, bool renorm,
                 D d, uint64_t offset, bool gpu = true) {
    out.push_back({std::move(label), {T, E, K, NG, TG, rsf, renorm}, offset, {d, gpu}});
  };
  auto groups = [](int64_t E, int64_t K, int64_t NG, int64_t TG) {
    return "remainder E " + std::to_string(E) + " K " + std::to_string(K) + " groups " + std::to_string(NG) + "/" +
           std::to_string(TG);
  };
  const std::pair<D, const char*> cpu_data[] = {{D::Gaussian, "gaussian, bias ~ U(-0.1, 0.1)"},
                                                {D::NegativeBias, "bias ~ -0.9"},
                                                {D::Ties, "exact ties, bias 0"},
                                                {D::NearTies, "near ties, bias 0"},
                                                {D::Nan, "NaN tokens"}};
  using Layout = std::array<int64_t, 4>;  // E, K, n_group, topk_group
  if (remainders) {
    // The CPU's layouts, each with every input kind: the CPU alone.
    for (auto [E, K, NG, TG] :
         {Layout{2, 1, 1, 1}, Layout{2, 2, 1, 1}, Layout{6, 3, 3, 2}, Layout{12, 3, 4, 1}, Layout{12, 12, 4, 4},
          Layout{16, 4, 4, 2}, Layout{66, 17, 6, 3}, Layout{67, 33, 1, 1}, Layout{64, 8, 8, 4}}) {
      uint64_t s0 = uint64_t(1000 * E + 10 * K);
      for (auto [d, name] : cpu_data)
        add(groups(E, K, NG, TG) + ", " + name, 7, E, K, NG, TG, 2.5f, d != D::Ties, d, s0++, false);
    }
    // With every group kept too (33 / 4 / 4: no group limit, as engines without grouping route;
    // 33 experts leave one past a multiple of 4, 8, 16 and 32 lanes; 64 fill two subgroups of 32
    // exactly, where a loop over experts running one stride too far leaves its private array).
    for (auto [E, K, NG, TG] : {Layout{2, 1, 1, 1}, Layout{6, 2, 3, 2}, Layout{8, 8, 4, 4}, Layout{33, 7, 3, 1},
                                Layout{66, 10, 6, 3}, Layout{300, 16, 10, 4}, Layout{33, 7, 1, 1}, Layout{300, 8, 4, 4},
                                Layout{64, 6, 1, 1}}) {
      const uint64_t sd = uint64_t(100 * E + K);
      add(groups(E, K, NG, TG), 5, E, K, NG, TG, 2.5f, true, D::Gaussian, sd);
      add(groups(E, K, NG, TG) + " ties", 5, E, K, NG, TG, 1.0f, K % 2 == 0, D::Ties, sd + 1);
    }
    // All tied (an all-equal input hides an ordering bug from random data), more experts than lanes.
    add("remainder E 300 K 16 groups 10/4 all equal", 2, 300, 16, 10, 4, 1.0f, true, D::AllEqual, 15);
    add("remainder E 1032 K 17 groups 8/4 all equal", 2, 1032, 17, 8, 4, 1.0f, false, D::AllEqual, 16);
    add("remainder E 32 NaN/inf tokens", 4, 32, 4, 4, 2, 2.5f, true, D::NonFinite, 9);
    // The NaN token last (T 3: token 2's NaN): a NaN path writing one slot too many writes past
    // idx and w (guard), where a following token's workgroup would overwrite it.
    add("remainder E 32 NaN token last", 3, 32, 4, 4, 2, 2.5f, true, D::NonFinite, 13);
    // More experts than 256 and 512 (groups of 129) and K above 10 and 16: the shared arrays and
    // top-K registers engines size for DeepSeek-V3; one token (decode) and five.
    add("remainder E 1032 K 17 groups 8/4", 5, 1032, 17, 8, 4, 2.5f, true, D::Gaussian, 10);
    add("remainder T 1 E 1032 K 17 groups 8/4", 1, 1032, 17, 8, 4, 2.5f, true, D::Gaussian, 11);
    // K = 64, the kernel's most (MAX_K): its chosen / weight arrays full.
    add("remainder E 256 K 64 groups 8/4", 2, 256, 64, 8, 4, 2.5f, true, D::Gaussian, 14);
    add("remainder T 1 E 2048 K 12 groups 16/5 ties", 1, 2048, 12, 16, 5, 1.0f, false, D::Ties, 12);
    // Logits of 100 (router_noaux_inputs, Large): sigmoid is exactly 1 in f32, and a sigmoid
    // formed as exp(x) / (1 + exp(x)) for every x gives inf / inf = NaN. Every group is kept:
    // shifted experts all score s = 1, so their groups differ by bias alone and could not be
    // kept apart by separate_groups' lowering.
    add("remainder E 66 K 10 groups 6/6 large logits", 4, 66, 10, 6, 6, 2.5f, true, D::Large, 17);
  }
  if (real) {
    const std::string ds = "DeepSeek-V3 ";
    add(ds + "decode, " + cpu_data[0].second, 1, 256, 8, 8, 4, 2.5f, true, D::Gaussian, 0, false);
    uint64_t s0 = 1;
    for (auto [d, name] : cpu_data) add(ds + "64 tokens, " + name, 64, 256, 8, 8, 4, 2.5f, true, d, s0++, false);
    add(ds + "decode", 1, 256, 8, 8, 4, 2.5f, true, D::Gaussian, 0);
    add(ds + "64 tokens", 64, 256, 8, 8, 4, 2.5f, true, D::Gaussian, 1);
    add(ds + "64 tokens bias -0.9", 64, 256, 8, 8, 4, 2.5f, true, D::NegativeBias, 2);
    add(ds + "64 tokens ties", 64, 256, 8, 8, 4, 2.5f, true, D::Ties, 3);
    add(ds + "64 tokens near-ties", 64, 256, 8, 8, 4, 2.5f, true, D::NearTies, 4);
    add(ds + "64 tokens not renormalised", 64, 256, 8, 8, 4, 2.5f, false, D::Gaussian, 5);
  }
  return out;
}

// The near-tie rule's scores: c in the truth's kept groups (their bounds as above), -inf (bound
// 0) elsewhere: a chosen expert of another group fails idx. Weights: router_weight_bounds over
// the kept groups' experts; renormalised, the division (m.division_rel) and the scaling (u).
RouterBounds router_noaux_bounds(const RouterNoauxParams& p, std::span<const float> logits, std::span<const float> bias,
                                 std::span<const int32_t> idx, std::span<const float> w, const PrecisionModel& m) {
  const int64_t T = p.tokens, E = p.experts, K = p.k, NG = p.n_group, TG = p.topk_group, GS = E / NG;
  RouterBounds b{std::vector<double>(size_t(T * E), 0.0), std::vector<double>(size_t(T * E), 0.0),
                 std::vector<double>(size_t(T * K), 0.0)};
  for (int64_t t = 0; t < T; ++t) {
    if (idx[size_t(t * K)] < 0) continue;  // NaN token: -1 and NaN, matched exactly
    std::fill_n(b.score.begin() + t * E, E, -INFINITY);
    const RouterRowErr r = errors(logits.data() + t * E, bias.data(), E, m);
    std::vector<double> G, bG;
    group_scores(r, NG, GS, m.u, G, bG);
    std::vector<int32_t> kept(static_cast<size_t>(TG)), cand;
    router::topk_lowest_index(G.data(), NG, TG, kept.data());
    for (int32_t g : kept)
      for (int64_t e = g * GS; e < (g + 1) * GS; ++e) {
        b.score[size_t(t * E + e)] = r.score[size_t(e)], b.score_bound[size_t(t * E + e)] = r.score_bound[size_t(e)];
        cand.push_back(int32_t(e));
      }
    const std::vector<double> wb =
        router_weight_bounds(r, idx.subspan(size_t(t * K), size_t(K)), cand, w.data() + t * K, K, p.renormalize,
                             double(p.routed_scaling_factor), m.division_rel + m.u, m);
    std::copy(wb.begin(), wb.end(), b.w_bound.begin() + t * K);
  }
  return b;
}

}  // namespace moe
