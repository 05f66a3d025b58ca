#include "spec/router_topk_spec.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

namespace moe {

namespace router {

bool selection_consistent(std::span<const int32_t> chosen, std::span<const int32_t> candidates,
                          std::span<const double> v, std::span<const double> bound) {
  std::vector<char> is_candidate(v.size(), 0), is_chosen(v.size(), 0);
  for (int32_t e : candidates) is_candidate[size_t(e)] = 1;
  double lowest_chosen = INFINITY;
  for (int32_t e : chosen) {
    if (e < 0 || size_t(e) >= v.size() || !is_candidate[size_t(e)] || is_chosen[size_t(e)]) return false;
    is_chosen[size_t(e)] = 1;
    lowest_chosen = std::min(lowest_chosen, v[size_t(e)] + bound[size_t(e)]);
  }
  double highest_other = -INFINITY;
  for (int32_t e : candidates)
    if (!is_chosen[size_t(e)]) highest_other = std::max(highest_other, v[size_t(e)] - bound[size_t(e)]);
  return lowest_chosen >= highest_other;
}

}  // namespace router

std::vector<float> router_logits(int64_t T, int64_t E, double sigma, RouterData d, const Rng& rng, Rng& noise) {
  std::vector<float> x = rng.fork(1).normal_vec(T * E, sigma);
  noise = rng.fork(2);
  for (float& v : x) {
    if (d == RouterData::Ties || d == RouterData::NearTies) v = std::round(v * 4.0f) / 4.0f;
    if (d == RouterData::NearTies) v += float(1e-6 * noise.normal());
  }
  return x;
}

std::vector<float> router_topk_inputs(const RouterTopkParams& p, uint64_t seed, RouterData d) {
  const int64_t T = p.tokens, E = p.experts;
  Rng noise(0);
  std::vector<float> x = router_logits(T, E, 2.0, d, Rng(seed), noise);
  if (d == RouterData::AllEqual) {
    for (int64_t t = 0; t < T; ++t)
      for (int64_t e = 0; e < E; ++e)
        x[size_t(t * E + e)] = t % 2 ? (e % 2 ? 0.0f : -0.0f) : std::round(x[size_t(t * E)] * 4.0f) / 4.0f;
  }
  if (d == RouterData::NonFinite) {
    const float inf = std::numeric_limits<float>::infinity();
    for (int64_t e = 0; e + 1 < E; e += 3) x[size_t(e)] = -inf;
    if (T > 1) x[size_t(E + E / 2)] = std::bit_cast<float>(0xFF800001u);
    if (T > 2) x[size_t(2 * E)] = inf;
    if (T > 3) std::fill(x.begin() + 3 * E, x.begin() + 4 * E, -inf);
  }
  if (d == RouterData::Large)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t e = 0; e < E; ++e) x[size_t(t * E + e)] += t % 2 ? -110.0f : 100.0f;
  return x;
}

std::vector<RouterTopkShape> router_topk_shapes(bool remainders, bool real) {
  using D = RouterData;
  std::vector<RouterTopkShape> out;
  auto add = [&](std::string label, int64_t T, int64_t E, int64_t K, bool renorm, D d, uint64_t offset,
                 bool gpu = true) {
    out.push_back({std::move(label), {T, E, K, renorm}, offset, {d, gpu}});
  };
  auto ek = [](int64_t E, int64_t K) { return "remainder E " + std::to_string(E) + " K " + std::to_string(K); };
  if (remainders) {
    // The CPU's sweep of K (1, 2, E/2, E - 1, E; past the kernel's 64 at E 67): the CPU alone.
    for (int64_t E : {1, 2, 3, 7, 31, 33, 64, 67}) {
      std::vector<int64_t> ks{1, 2, E / 2, E - 1, E};
      std::sort(ks.begin(), ks.end());
      ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
      for (int64_t K : ks) {
        if (K < 1 || K > E) continue;
        const uint64_t s = uint64_t(100 * E + K);
        add(ek(E, K) + ", gaussian", 5, E, K, true, D::Gaussian, s, false);
        add(ek(E, K) + ", exact ties", 5, E, K, K % 2 == 0, D::Ties, s + 1, false);
        add(ek(E, K) + ", near ties", 5, E, K, true, D::NearTies, s + 2, false);
      }
    }
    add("remainder E 33 K 5, NaN/inf tokens", 6, 33, 5, true, D::NonFinite, 7, false);
    // One expert; K = E; odd E below, at and above the 256 lanes; K = 64 (the kernel's most).
    for (auto [E, K] :
         std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {3, 2}, {7, 7}, {33, 5}, {67, 33}, {257, 64}, {300, 10}}) {
      add(ek(E, K), 5, E, K, true, D::Gaussian, uint64_t(100 * E + K));
      add(ek(E, K) + " ties", 5, E, K, K % 2 == 0, D::Ties, uint64_t(100 * E + K) + 1);
    }
    // Every expert tied (an all-equal input hides an ordering bug from random data): more
    // experts than lanes, so one lane scans several.
    add("remainder E 300 K 10 all equal", 4, 300, 10, true, D::AllEqual, 9);
    // Powers of two (a multiple of every subgroup size up to 16, of 32 at 64): engines that pad E
    // to a power of two and scan it a subgroup-width at a time run no padded lane here.
    add(ek(16, 3), 5, 16, 3, true, D::Gaussian, 1603);
    add(ek(64, 6), 5, 64, 6, true, D::Gaussian, 6406);
    add("remainder E 1031 K 11 all equal", 2, 1031, 11, true, D::AllEqual, 10);
    add("remainder E 33 K 5 NaN/inf tokens", 6, 33, 5, true, D::NonFinite, 7);
    // The all -inf (undefined) token last (T 4): a -1/NaN path writing one slot too many writes
    // past idx and w (guard), where a following token's workgroup would overwrite it.
    add("remainder E 33 K 5 undefined token last", 4, 33, 5, true, D::NonFinite, 8);
    // Logits far from 0 (router_topk_inputs, Large): a softmax without its max shift, or with the
    // shift's sign flipped, overflows or underflows to NaN weights here and nowhere else.
    add("remainder E 67 K 8 large logits", 4, 67, 8, true, D::Large, 12);
    add("remainder E 300 K 10 large logits not renormalised", 4, 300, 10, false, D::Large, 13);
    // More experts than 512 (and 1024, 2048) and K above the models' 10 and Metal's 16: engines
    // size their shared score arrays and top-K registers for the models they expect.
    for (auto [E, K] : std::vector<std::pair<int64_t, int64_t>>{{1031, 11}, {2053, 17}}) {
      add(ek(E, K), 5, E, K, true, D::Gaussian, uint64_t(100 * E + K));
      add(ek(E, K) + " ties", 5, E, K, false, D::Ties, uint64_t(100 * E + K) + 1);
      add("remainder T 1 E " + std::to_string(E) + " K " + std::to_string(K), 1, E, K, true, D::Gaussian,
          uint64_t(100 * E + K) + 2);
    }
  }
  using Model = std::tuple<std::string, int64_t, int64_t>;
  if (real) {
    for (auto [s, E, K] : std::vector<Model>{
             {"A17B", 512, 10}, {"A17B engine K=4", 512, 4}, {"A3B", 256, 8}, {"A3B engine K=4", 256, 4}}) {
      const uint64_t s0 = uint64_t(10 * E + K);
      add(s + " decode, gaussian", 1, E, K, true, D::Gaussian, s0, false);
      add(s + " 64 tokens, gaussian", 64, E, K, true, D::Gaussian, s0 + 1, false);
      add(s + " 64 tokens, exact ties", 64, E, K, true, D::Ties, s0 + 2, false);
      add(s + " 64 tokens, near ties", 64, E, K, true, D::NearTies, s0 + 3, false);
    }
    add("A17B 8 tokens, NaN/inf tokens", 8, 512, 10, true, D::NonFinite, 9, false);
    add("A3B 64 tokens, gaussian", 64, 256, 8, false, D::Gaussian, 11, false);
    for (auto [s, E, K] : std::vector<Model>{{"A17B", 512, 10}, {"A17B engine K 4", 512, 4}, {"A3B", 256, 8}}) {
      const uint64_t s0 = uint64_t(10 * E + K);
      add(s + " decode", 1, E, K, true, D::Gaussian, s0);
      add(s + " 64 tokens ties", 64, E, K, true, D::Ties, s0 + 1);
      add(s + " 64 tokens near-ties", 64, E, K, true, D::NearTies, s0 + 2);
    }
    add("A17B 64 tokens not renormalised", 64, 512, 10, false, D::Gaussian, 3);
    add("A3B 64 tokens near-ties not renormalised", 64, 256, 8, false, D::NearTies, 4);
    add("A17B 8 tokens NaN/inf", 8, 512, 10, true, D::NonFinite, 5);
    add("A17B 8 tokens large logits", 8, 512, 10, true, D::Large, 6);
  }
  return out;
}

namespace {

// One row's errors of an implementation's probabilities p_e, first order in u, against the
// truth's P_e (the f64 softmax rounded once to f32, within u P_e of the exact p_e):
//   m = max logit: exact. d = x_e - m rounds once: exp's value moves by u |d| (relative).
//   exp(d): m.exp_rel(d). An implementation forming exp2(d * log2e) instead: the f32 constant
//   and the product 2u|d| on the argument (as 2u|d| relative on the value), exp2's error at
//   1.4427|d|: delta_e = m.exp_rel(1.4427|d|) + 3u|d| covers both forms.
//   The sum over E (any order): m.sum(E) plus the weighted mean sum_e P_e delta_e of its terms'
//   errors, plus E 2^-126 for exponentials flushed to zero (the sum is >= 1): eta, common to all e.
//   p = e / sum (m.division_rel) or e * (1/sum) (division_rel common + u): division_rel per
//   element and division_rel common.
//   a_e = delta_e + division_rel + u (P's own rounding): the part of p_e's error not common to
//   all experts. beta_e = P_e (a_e + eta + division_rel) + 2 kMinNormal (a flushed e and a
//   flushed product): the near-tie rule's score bound, and the unrenormalised weight's.
// -inf logits: p = 0 exactly (the op's math; an implementation must not trust exp(-inf), which
// the Vulkan rules leave unbounded), so only the absolute term.
RouterRowErr topk_row_errors(const float* x, const double* P, int64_t E, const PrecisionModel& m) {
  const double u = m.u, mx = *std::max_element(x, x + E);
  RouterRowErr r;
  r.score.assign(P, P + E), r.value = r.score, r.floor = 2 * kMinNormal32;
  double eta = m.sum(double(E)) + double(E) * kMinNormal32;
  std::vector<double> delta(static_cast<size_t>(E));
  for (int64_t e = 0; e < E; ++e) {
    const double d = double(x[e]) - mx;
    delta[size_t(e)] = std::isinf(d) ? 0.0 : m.exp_rel(1.4427 * std::fabs(d)) + 3 * u * std::fabs(d);
    eta += P[e] * delta[size_t(e)];
  }
  for (int64_t e = 0; e < E; ++e) {
    const bool inf = std::isinf(double(x[e]));
    r.rel.push_back(inf ? 0.0 : delta[size_t(e)] + m.division_rel + u);
    r.direct.push_back(inf ? 0.0 : r.rel.back() + eta + m.division_rel);
    r.score_bound.push_back(P[e] * r.direct.back() + r.floor);
  }
  return r;
}

}  // namespace

RouterBounds router_topk_bounds(const RouterTopkParams& p, std::span<const float> logits, std::span<const int32_t> idx,
                                std::span<const float> w, const PrecisionModel& m) {
  const int64_t T = p.tokens, E = p.experts, K = p.k;
  // Every expert's probability: the op in f64 with K = E, not renormalised (slots by weight).
  std::vector<int32_t> all_i(size_t(T * E)), cand(static_cast<size_t>(E));
  std::vector<float> all_w(size_t(T * E));
  router_topk_ref<double>({T, E, E, false}, logits, all_i, all_w);
  std::iota(cand.begin(), cand.end(), 0);
  RouterBounds b{std::vector<double>(size_t(T * E), 0.0), std::vector<double>(size_t(T * E), 0.0),
                 std::vector<double>(size_t(T * K), 0.0)};
  for (int64_t t = 0; t < T; ++t) {
    if (idx[size_t(t * K)] < 0) continue;  // undefined token: -1 and NaN, matched exactly
    std::vector<double> P(static_cast<size_t>(E));
    for (int64_t j = 0; j < E; ++j) P[size_t(all_i[size_t(t * E + j)])] = all_w[size_t(t * E + j)];
    const RouterRowErr r = topk_row_errors(logits.data() + t * E, P.data(), E, m);
    std::copy(r.score.begin(), r.score.end(), b.score.begin() + t * E);
    std::copy(r.score_bound.begin(), r.score_bound.end(), b.score_bound.begin() + t * E);
    // Renormalised: the implementation's reciprocal and product (division_rel + u) and the
    // u of the chosen P's rounding to f32.
    const std::vector<double> wb =
        router_weight_bounds(r, idx.subspan(size_t(t * K), size_t(K)), cand, w.data() + t * K, K, p.renormalize, 1.0,
                             m.division_rel + 2 * m.u, m);
    std::copy(wb.begin(), wb.end(), b.w_bound.begin() + t * K);
  }
  return b;
}

// Weight bounds per slot. Slots are ordered by weight (descending, ties by ascending index), in
// the implementation's output as in the truth's row, so slot j of both is the j-th largest
// weight: compared by order statistic, which is sound when a near-tie puts another expert into
// the set or swaps the order of two close weights.
// Candidates C = S (the truth's K) plus the entrants A: the experts of cand outside S that the
// near-tie rule could accept in the found set (score_a + bound_a >= min over S of score_i -
// bound_i; a set holding any other expert fails idx). Whatever set F (K of C) the
// implementation took, its weight of each c lies in [lo_c, hi_c] (below); the j-th largest of K
// values from C is then at most the j-th largest hi over C and at least the (j + |A|)-th
// largest lo over C. When A is empty (the usual row) this is the j-th largest of S's intervals.
//   Not renormalised: w_c = v_c rsf within direct_c (and the scaling's rounding in it).
//   Renormalised: w_c = v_c / sum_F v * rsf. The common factor of all values cancels; the sum
//   carries max_C rel + m.sum(K), the division and scaling `extra`: rho_c = rel_c + max_C rel +
//   m.sum(K) + extra; sum_F v lies between the sums of the K smallest and K largest v of C.
//   Values at their floor (flushed) add (K + 1) floor rsf / sum_lo, the result's flush 2^-126.
// The slot's bound is the larger distance from the truth's weight to those limits.
std::vector<double> router_weight_bounds(const RouterRowErr& r, std::span<const int32_t> S,
                                         std::span<const int32_t> cand, const float* T, int64_t K, bool renorm,
                                         double rsf, double extra, const PrecisionModel& m) {
  double min_s = std::numeric_limits<double>::infinity();
  for (int32_t e : S) min_s = std::min(min_s, r.score[size_t(e)] - r.score_bound[size_t(e)]);
  std::vector<int32_t> C(S.begin(), S.end());
  for (int32_t e : cand)
    if (std::find(S.begin(), S.end(), e) == S.end() && r.score[size_t(e)] + r.score_bound[size_t(e)] >= min_s)
      C.push_back(e);
  const size_t n_a = C.size() - S.size();
  std::vector<double> vc, lo, hi;
  double rel_max = 0;
  for (int32_t c : C) vc.push_back(r.value[size_t(c)]), rel_max = std::max(rel_max, r.rel[size_t(c)]);
  std::sort(vc.begin(), vc.end());
  double sum_lo = 0, sum_hi = 0;
  for (int64_t j = 0; j < K; ++j) sum_lo += vc[size_t(j)], sum_hi += vc[vc.size() - 1 - size_t(j)];
  for (int32_t c : C) {
    const double v = r.value[size_t(c)];
    if (!renorm) {
      const double rho = r.direct[size_t(c)];
      lo.push_back(v * rsf * (1 - rho) - 2 * kMinNormal32), hi.push_back(v * rsf * (1 + rho) + 2 * kMinNormal32);
    } else if (sum_lo > 0) {
      const double rho = r.rel[size_t(c)] + rel_max + m.sum(double(K)) + extra;
      const double flush = double(K + 1) * r.floor * rsf / sum_lo + kMinNormal32;
      lo.push_back(v / sum_hi * rsf * (1 - rho) - flush), hi.push_back(v / sum_lo * rsf * (1 + rho) + flush);
    } else {
      lo.push_back(0.0), hi.push_back(v > 0 ? INFINITY : 0.0);  // not in the cases: every set has v > 0
    }
  }
  std::sort(lo.begin(), lo.end(), std::greater<>()), std::sort(hi.begin(), hi.end(), std::greater<>());
  std::vector<double> b(static_cast<size_t>(K));
  for (int64_t j = 0; j < K; ++j)
    b[size_t(j)] = std::max({hi[size_t(j)] - double(T[j]), double(T[j]) - lo[size_t(j) + n_a], 0.0});
  return b;
}

namespace {

// Whether `f` (K distinct ids) may stand for the truth's set: a near-tie of the row's scores
// within their bounds, and no exact tie (equal finite scores) given to the higher index.
bool near_tie(std::span<const int32_t> f, std::span<const double> score, std::span<const double> bound) {
  std::vector<int32_t> all(score.size());
  std::iota(all.begin(), all.end(), 0);
  if (!router::selection_consistent(f, all, score, bound)) return false;
  for (int32_t e : f)
    for (int32_t j = 0; j < e; ++j)
      if (std::isfinite(score[size_t(e)]) && score[size_t(j)] == score[size_t(e)] &&
          std::find(f.begin(), f.end(), j) == f.end())
        return false;
  return true;
}

}  // namespace

void router_sort_rows(std::span<int32_t> idx, std::span<float> w, int64_t K) {
  for (size_t r0 = 0; r0 < idx.size(); r0 += size_t(K))
    if (idx[r0] >= 0) router::sort_by_weight(idx.data() + r0, w.data() + r0, K);
}

void router_judge(TierReport& rep, int64_t E, int64_t K, std::span<const int32_t> truth_i,
                  std::span<const float> truth_w, std::vector<int32_t> found_i, std::vector<float> found_w,
                  const RouterBounds& b) {
  std::vector<int32_t> exp_i(truth_i.begin(), truth_i.end());
  std::vector<float> pair_t, pair_f;
  std::vector<double> pair_b;
  router_sort_rows(found_i, found_w, K);
  for (size_t r0 = 0; r0 < exp_i.size(); r0 += size_t(K)) {
    const auto ti = truth_i.subspan(r0, size_t(K));
    const std::span<int32_t> fi(found_i.data() + r0, size_t(K));
    if (ti[0] < 0) continue;  // an undefined token: -1 and NaN, matched exactly
    std::vector<int32_t> st(ti.begin(), ti.end()), sf(fi.begin(), fi.end());
    std::sort(st.begin(), st.end()), std::sort(sf.begin(), sf.end());
    const size_t row = r0 / size_t(K) * size_t(E);
    if (st == sf ||
        near_tie(fi, std::span(b.score).subspan(row, size_t(E)), std::span(b.score_bound).subspan(row, size_t(E))))
      std::copy(fi.begin(), fi.end(), exp_i.begin() + ptrdiff_t(r0));
    if (st != sf) continue;
    for (size_t j = 0; j < size_t(K); ++j) {  // the weight of each found expert: the truth's of it
      const size_t k = size_t(std::find(ti.begin(), ti.end(), fi[j]) - ti.begin());
      pair_t.push_back(truth_w[r0 + k]), pair_f.push_back(found_w[r0 + j]), pair_b.push_back(b.w_bound[r0 + k]);
    }
  }
  rep.add_exact("idx", exp_i, found_i);
  rep.add("w", truth_w, found_w, b.w_bound);
  rep.add("w of its expert", pair_t, pair_f, pair_b);
}

}  // namespace moe
