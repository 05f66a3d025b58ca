#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <string>

#include "core/check.h"
#include "core/params.h"
#include "core/rng.h"
#include "ops/router_noaux.h"

namespace moe {
namespace {

enum class Data { Gaussian, NegativeBias, Ties, NearTies, Nan };

const char* data_name(Data d) {
  switch (d) {
    case Data::Gaussian: return "gaussian, bias ~ U(-0.1, 0.1)";
    case Data::NegativeBias: return "bias ~ -0.9";
    case Data::Ties: return "exact ties, bias 0";
    case Data::NearTies: return "near ties, bias 0";
    case Data::Nan: return "NaN tokens";
  }
  return "";
}

struct Inputs {
  std::vector<float> logits, bias;
};

// Gate logits ~ N(0, 1.5). Bias ~ U(-0.1, 0.1), or -0.9 + U(-0.05, 0.05) where the -inf vs 0.0
// masking rules differ. Ties: logits on a 1/4 grid, bias 0: equal scores inside groups and
// equal group scores. NearTies: the grid plus N(0, 1e-6) noise. Nan: every third token has a
// NaN logit.
Inputs make_inputs(const RouterNoauxParams& p, Data d, Rng rng) {
  Inputs in;
  in.logits = rng.fork(1).normal_vec(p.tokens * p.experts, 1.5);
  Rng noise = rng.fork(2);
  for (auto& v : in.logits) {
    if (d == Data::Ties || d == Data::NearTies) v = std::round(v * 4.0f) / 4.0f;
    if (d == Data::NearTies) v += float(1e-6 * noise.normal());
  }
  if (d == Data::Nan) {
    for (int64_t t = 0; t < p.tokens; t += 3) in.logits[t * p.experts + noise.below(p.experts)] = NAN;
  }
  if (d == Data::Ties || d == Data::NearTies) {
    in.bias.assign(p.experts, 0.0f);
  } else if (d == Data::NegativeBias) {
    in.bias = rng.fork(3).uniform_vec(p.experts, -0.95f, -0.85f);
  } else {
    in.bias = rng.fork(3).uniform_vec(p.experts, -0.1f, 0.1f);
  }
  return in;
}

// The truth's sigmoid scores of every expert: the op itself in f64 with one group, K = E, no
// renormalisation, scale 1 (so w = s, rounded to f32: within u s of the exact s).
std::vector<double> truth_scores(const RouterNoauxParams& p, const Inputs& in) {
  const RouterNoauxParams all{p.tokens, p.experts, p.experts, 1, 1, 1.0f, false};
  std::vector<int32_t> idx(p.tokens * p.experts);
  std::vector<float> w(p.tokens * p.experts);
  router_noaux_ref<double>(all, in.logits, in.bias, idx, w);
  std::vector<double> s(p.tokens * p.experts, NAN);
  for (int64_t t = 0; t < p.tokens; ++t) {
    for (int64_t j = 0; j < p.experts; ++j) {
      const int32_t e = idx[t * p.experts + j];
      if (e >= 0) s[t * p.experts + e] = w[t * p.experts + j];
    }
  }
  return s;
}

// Compares one tier with the truth, token by token.
//
// Error bounds (both f32 tiers, first order in u). s = 1/(1 + expf(-x)): expf within 1 ulp
// (2u), the sum 1 + t adds u and carries t's 2u scaled by t/(1+t) <= 1, the division u: 4u s.
// The truth's s reaches the check rounded to f32: u s more. c = s + bias rounds once: u |c|.
// So beta_c = 5u s + u |c| (+ the smallest normal, for s that underflow). A group score is a
// top-2 sum, 1-Lipschitz in each score: beta_G = 2 max_g beta_c + u |G| (its own rounding).
// The tier's selection is legitimate iff some kept-group set Gamma (topk_group groups, holding
// every chosen expert) is a top-topk_group of G within beta_G, and the chosen experts are a
// top-K of c within beta_c among Gamma's experts (router::selection_consistent, all Gamma tried).
// Weights: s_e (4u) over the sum of the chosen s (4u propagated, gamma_K its roundings), the
// division u, the scaling u, the truth's rounding to f32 u: 11u + gamma_K. Unrenormalised:
// 4u + u + u = 6u. Where the tier chose a different set the expected weight is recomputed from
// the f32-rounded truth scores: 3u more renormalised (two roundings in the ratio, one to f32),
// 2u unrenormalised.
void compare_tier(TierReport& rep, const RouterNoauxParams& p, const Inputs& in, const std::vector<double>& s_all,
                  const std::vector<int32_t>& t_idx, const std::vector<float>& t_w, const std::vector<int32_t>& idx,
                  const std::vector<float>& w) {
  const int64_t E = p.experts, K = p.k, NG = p.n_group, GS = E / NG;
  const double u = kU32;
  MOE_CHECK(NG <= 20, "router_noaux check: n_group=" << NG << " too many groups to enumerate kept sets (max 20)");
  std::vector<int32_t> exp_idx(p.tokens * K);
  std::vector<float> exp_w(p.tokens * K);
  std::vector<double> bound(p.tokens * K, 0.0);
  std::vector<double> c(E), beta_c(E), G(NG), beta_G(NG);
  std::vector<int32_t> groups(NG), cand;
  for (int64_t g = 0; g < NG; ++g) groups[g] = int32_t(g);
  for (int64_t t = 0; t < p.tokens; ++t) {
    const int32_t* ti = t_idx.data() + t * K;
    const float* tw = t_w.data() + t * K;
    const int32_t* fi = idx.data() + t * K;
    int32_t* ei = exp_idx.data() + t * K;
    float* ew = exp_w.data() + t * K;
    double* eb = bound.data() + t * K;
    std::copy(ti, ti + K, ei), std::copy(tw, tw + K, ew);  // default: the truth's row, exactly
    if (ti[0] < 0) continue;                               // the truth's NaN row: reproduce it
    const double* S = s_all.data() + t * E;
    for (int64_t e = 0; e < E; ++e) {
      c[e] = S[e] + double(in.bias[e]);
      beta_c[e] = 5 * u * S[e] + u * std::fabs(c[e]) + kMinNormal32;
    }
    for (int64_t g = 0; g < NG; ++g) {
      double top1 = -INFINITY, top2 = -INFINITY, worst = 0;
      for (int64_t e = g * GS; e < (g + 1) * GS; ++e) {
        if (c[e] > top1) {
          top2 = top1, top1 = c[e];
        } else if (c[e] > top2) {
          top2 = c[e];
        }
        worst = std::max(worst, beta_c[e]);
      }
      G[g] = top1 + top2;
      beta_G[g] = 2 * worst + u * std::fabs(G[g]);
    }
    // Groups that must be kept: those of the chosen experts (an invalid id fails here).
    uint32_t needed = 0;
    bool ids_valid = true;
    for (int64_t j = 0; j < K; ++j) {
      if (fi[j] < 0 || fi[j] >= E) {
        ids_valid = false;
        break;
      }
      needed |= 1u << (fi[j] / GS);
    }
    const std::span<const int32_t> chosen(fi, K);
    bool legit = false;
    for (uint32_t mask = 0; ids_valid && !legit && mask < (1u << NG); ++mask) {
      if (std::popcount(mask) != p.topk_group || (mask & needed) != needed) continue;
      std::vector<int32_t> kept;
      cand.clear();
      for (int64_t g = 0; g < NG; ++g) {
        if (!(mask >> g & 1u)) continue;
        kept.push_back(int32_t(g));
        for (int64_t e = g * GS; e < (g + 1) * GS; ++e) cand.push_back(int32_t(e));
      }
      legit = router::selection_consistent(kept, groups, G, beta_G) &&
              router::selection_consistent(chosen, cand, c, beta_c);
    }
    if (!legit) continue;  // the idx comparison with the truth's row fails
    std::vector<int32_t> s_truth(ti, ti + K), s_tier(fi, fi + K);
    std::sort(s_truth.begin(), s_truth.end()), std::sort(s_tier.begin(), s_tier.end());
    const bool same_set = s_truth == s_tier;
    double chosen_sum = 0;
    for (int32_t e : chosen) chosen_sum += S[e];
    for (int64_t j = 0; j < K; ++j) {
      const int32_t e = fi[j];
      double rel = p.renormalize ? 11 * u + gamma_n(double(K)) : 6 * u;
      ei[j] = e;
      if (same_set) {
        ew[j] = tw[std::find(ti, ti + K, e) - ti];
      } else {
        const double norm = !p.renormalize ? S[e] : (chosen_sum > 0 ? S[e] / chosen_sum : 0.0);
        ew[j] = float(norm * double(p.routed_scaling_factor));
        rel += p.renormalize ? 3 * u : 2 * u;
      }
      eb[j] = std::fabs(double(ew[j])) * rel + kMinNormal32;
    }
  }
  rep.add_exact("idx", exp_idx, idx);
  rep.add("w", exp_w, w, bound);
}

CheckResult run_case(const std::string& label, const RouterNoauxParams& p, Data d, uint64_t seed) {
  const Inputs in = make_inputs(p, d, Rng(seed));
  const size_t n = p.tokens * p.k;
  std::vector<int32_t> truth_i(n), r32_i(n), fast_i(n);
  std::vector<float> truth_w(n), r32_w(n), fast_w(n);
  CheckResult res{"router_noaux", label + ", " + data_name(d), params_to_string(p), seed};
  res.truth_seconds = time_call([&] { router_noaux_ref<double>(p, in.logits, in.bias, truth_i, truth_w); });
  res.ref32.seconds = time_call([&] { router_noaux_ref<float>(p, in.logits, in.bias, r32_i, r32_w); });
  res.fast.seconds = time_call([&] { router_noaux_fast(p, in.logits, in.bias, fast_i, fast_w); });
  const std::vector<double> s_all = truth_scores(p, in);
  compare_tier(res.ref32, p, in, s_all, truth_i, truth_w, r32_i, r32_w);
  compare_tier(res.fast, p, in, s_all, truth_i, truth_w, fast_i, fast_w);
  return res;
}

}  // namespace

std::vector<CheckResult> router_noaux_check(uint64_t seed, CheckScope scope) {
  std::vector<CheckResult> out;
  const Data all_data[] = {Data::Gaussian, Data::NegativeBias, Data::Ties, Data::NearTies, Data::Nan};
  if (scope_has_remainders(scope)) {
    struct Shape {
      int64_t E, K, n_group, topk_group;
    };
    // Small and odd group layouts: one group (plain top-K), groups of 2, all groups kept,
    // K = every kept expert, odd group sizes.
    for (const Shape& s : {Shape{2, 1, 1, 1}, Shape{2, 2, 1, 1}, Shape{6, 3, 3, 2}, Shape{12, 3, 4, 1},
                           Shape{12, 12, 4, 4}, Shape{16, 4, 4, 2}, Shape{66, 17, 6, 3}, Shape{67, 33, 1, 1},
                           Shape{64, 8, 8, 4}}) {
      const std::string label = "remainder E " + std::to_string(s.E) + " K " + std::to_string(s.K) + " groups " +
                                std::to_string(s.n_group) + "/" + std::to_string(s.topk_group);
      uint64_t s0 = seed + 1000 * s.E + 10 * s.K;
      for (Data d : all_data) {
        out.push_back(run_case(label, {7, s.E, s.K, s.n_group, s.topk_group, 2.5f, d != Data::Ties}, d, s0++));
      }
    }
  }
  if (scope_has_real(scope)) {
    // DeepSeek-V3 / Cogito-V2 (docs/ops/models.md "Shape constants"): E 256, K 8, n_group 8, topk_group 4,
    // scale 2.5.
    const RouterNoauxParams decode{1, 256, 8, 8, 4, 2.5f, true}, prefill{64, 256, 8, 8, 4, 2.5f, true};
    out.push_back(run_case("DeepSeek-V3 decode", decode, Data::Gaussian, seed));
    uint64_t s0 = seed + 1;
    for (Data d : all_data) out.push_back(run_case("DeepSeek-V3 64 tokens", prefill, d, s0++));
  }
  return out;
}

}  // namespace moe
