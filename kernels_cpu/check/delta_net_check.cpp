#include <cmath>
#include <string>

#include "core/params.h"
#include "core/rng.h"
#include "ops/delta_net.h"

namespace moe {
namespace {

// Inputs as the layer produces them: q, k per head L2-normalised (|k| = 1, |q| = 1/sqrt(dk),
// qk_norm), v ~ N(0, 1), g ~ U(0.9, 1), beta ~ U(0.3, 0.7), initial state 0.01 U(-1, 1).
// special_gates: each (token, head) instead draws one of g = 0 (hard reset), beta = 0,
// beta = 1, g = 0 with beta = 1, g = 1 with beta = 0 (identity), or the realistic gates.
struct Inputs {
  std::vector<float> q, k, v, g, beta, state0;
};

Inputs make_inputs(const DeltaNetParams& p, uint64_t seed, bool special_gates) {
  Rng rng(seed);
  const int64_t T = p.tokens, Hk = p.k_heads, Hv = p.v_heads, dk = p.key_dim, dv = p.value_dim;
  Inputs in;
  in.q = rng.fork(1).normal_vec(T * Hk * dk, 1.0);
  in.k = rng.fork(2).normal_vec(T * Hk * dk, 1.0);
  for (int64_t head = 0; head < T * Hk; ++head) {
    double nq = 0, nk = 0;
    for (int64_t i = 0; i < dk; ++i) nq += double(in.q[head * dk + i]) * in.q[head * dk + i];
    for (int64_t i = 0; i < dk; ++i) nk += double(in.k[head * dk + i]) * in.k[head * dk + i];
    for (int64_t i = 0; i < dk; ++i) in.q[head * dk + i] = float(in.q[head * dk + i] / std::sqrt(nq * dk));
    for (int64_t i = 0; i < dk; ++i) in.k[head * dk + i] = float(in.k[head * dk + i] / std::sqrt(nk));
  }
  in.v = rng.fork(3).normal_vec(T * Hv * dv, 1.0);
  in.g = rng.fork(4).uniform_vec(T * Hv, 0.9f, 1.0f);
  in.beta = rng.fork(5).uniform_vec(T * Hv, 0.3f, 0.7f);
  in.state0 = rng.fork(6).uniform_vec(Hv * dv * dk, -0.01f, 0.01f);
  if (special_gates) {
    Rng rs = rng.fork(7);
    for (int64_t i = 0; i < T * Hv; ++i) {
      switch (rs.below(6)) {
        case 0: in.g[i] = 0.0f; break;
        case 1: in.beta[i] = 0.0f; break;
        case 2: in.beta[i] = 1.0f; break;
        case 3: in.g[i] = 0.0f, in.beta[i] = 1.0f; break;
        case 4: in.g[i] = 1.0f, in.beta[i] = 0.0f; break;
        default: break;
      }
    }
  }
  return in;
}

// Error bounds for one token, each tier fed the truth's f32 state S (first order in u).
// Why per token: every tier stores an f32 state, so the tier's and the truth's states drift
// apart over tokens by amounts that depend on how the recurrence amplifies earlier errors (the
// model's conditioning, not the kernel's accuracy). Restarting each token from the truth's state
// gives a tight, rigorous per-token bound; together with "a T-token call equals T one-token
// calls bit-for-bit" (tested for every tier) it covers the multi-token path.
// For row vi of v-head h, with s_i = g S[vi][i], k, q of its k-head (all f64 from the truth's
// inputs; the truth's own f64 roundings are ~2^-53, negligible):
// - kv_mem = sum_i s_i k_i: the decay's rounding (u |s_i|) and a dk-term dot product in any
//   order (gamma_dk; also when folded as g (S k)): |dkv| <= gamma_{dk+1} M_kv, M_kv = sum |s_i k_i|;
// - delta = (v - kv_mem) beta: |d delta| <= D = beta gamma_{dk+1} M_kv + 2u |delta| (two roundings);
// - S1_i = s_i + k_i delta: the tier's f32 state is off by e_i = u|s_i| + u|k_i delta| + u|S1_i|
//   (decay, product, sum: fused or not, at most these three) + |k_i| D; the truth's rounding to
//   f32 adds u|S1_i|, and kMinNormal32 covers subnormal state elements;
// - o = sum_i S1_i q_i read from the tier's state: gamma_dk sum |S1_i q_i| + sum |q_i| e_i,
//   plus u|o| for the truth's rounding and kMinNormal32.
void token_bounds(const DeltaNetParams& p, const Inputs& in, int64_t t, const std::vector<float>& S,
                  std::vector<double>& state_bound, std::vector<double>& o_bound) {
  const int64_t Hk = p.k_heads, Hv = p.v_heads, dk = p.key_dim, dv = p.value_dim, r = Hv / Hk;
  const double u = kU32, g_kv = gamma_n(double(dk + 1)), g_o = gamma_n(double(dk));
  for (int64_t h = 0; h < Hv; ++h) {
    const float* qh = in.q.data() + (t * Hk + h / r) * dk;
    const float* kh = in.k.data() + (t * Hk + h / r) * dk;
    const double gh = in.g[t * Hv + h], bh = in.beta[t * Hv + h];
    for (int64_t vi = 0; vi < dv; ++vi) {
      const float* row = S.data() + (h * dv + vi) * dk;
      double m_kv = 0, kv = 0;
      for (int64_t i = 0; i < dk; ++i) {
        const double s = gh * row[i];
        m_kv += std::fabs(s * kh[i]), kv += s * kh[i];
      }
      const double delta = (double(in.v[(t * Hv + h) * dv + vi]) - kv) * bh;
      const double D = bh * g_kv * m_kv + 2 * u * std::fabs(delta);
      double m_o = 0, o = 0, prop = 0;
      for (int64_t i = 0; i < dk; ++i) {
        const double s = gh * row[i], kd = kh[i] * delta, s1 = s + kd;
        const double e = u * (std::fabs(s) + std::fabs(kd) + std::fabs(s1)) + std::fabs(double(kh[i])) * D;
        state_bound[(h * dv + vi) * dk + i] = e + u * std::fabs(s1) + kMinNormal32;
        m_o += std::fabs(s1 * qh[i]), o += s1 * qh[i], prop += std::fabs(double(qh[i])) * e;
      }
      o_bound[h * dv + vi] = g_o * m_o + prop + u * std::fabs(o) + kMinNormal32;
    }
  }
}

CheckResult run_case(const std::string& label, const DeltaNetParams& p, uint64_t seed, bool special_gates) {
  const Inputs in = make_inputs(p, seed, special_gates);
  const int64_t T = p.tokens, Hk = p.k_heads, Hv = p.v_heads, dk = p.key_dim, dv = p.value_dim;
  CheckResult res{"delta_net", label, params_to_string(p), seed};
  // Token by token, every tier starting from the truth's state (see token_bounds). A T-token
  // call is T one-token calls bit-for-bit, so the summed times are the T-token calls' times.
  DeltaNetParams p1 = p;
  p1.tokens = 1;
  std::vector<float> S = in.state0, st_t, st_r, st_f;
  std::vector<float> o_t(Hv * dv), o_r(Hv * dv), o_f(Hv * dv);
  std::vector<double> state_bound(S.size()), o_bound(Hv * dv);
  for (int64_t t = 0; t < T; ++t) {
    const auto qt = std::span<const float>(in.q).subspan(t * Hk * dk, Hk * dk);
    const auto kt = std::span<const float>(in.k).subspan(t * Hk * dk, Hk * dk);
    const auto vt = std::span<const float>(in.v).subspan(t * Hv * dv, Hv * dv);
    const auto gt = std::span<const float>(in.g).subspan(t * Hv, Hv);
    const auto bt = std::span<const float>(in.beta).subspan(t * Hv, Hv);
    st_t = S, st_r = S, st_f = S;
    res.truth_seconds += time_call([&] { delta_net_ref<double>(p1, qt, kt, vt, gt, bt, st_t, o_t); });
    res.ref32.seconds += time_call([&] { delta_net_ref<float>(p1, qt, kt, vt, gt, bt, st_r, o_r); });
    res.fast.seconds += time_call([&] { delta_net_fast(p1, qt, kt, vt, gt, bt, st_f, o_f); });
    token_bounds(p, in, t, S, state_bound, o_bound);
    res.ref32.add("o", o_t, o_r, o_bound);
    res.fast.add("o", o_t, o_f, o_bound);
    res.ref32.add("state", st_t, st_r, state_bound);
    res.fast.add("state", st_t, st_f, state_bound);
    S.swap(st_t);
  }
  return res;
}

}  // namespace

std::vector<CheckResult> delta_net_check(uint64_t seed, CheckScope scope) {
  std::vector<CheckResult> out;
  if (scope_has_remainders(scope)) {
    out.push_back(run_case("remainder 1x1 heads, dk 1, dv 1", {3, 1, 1, 1, 1}, seed + 1, false));
    out.push_back(run_case("remainder dk 31, dv 33", {3, 1, 2, 31, 33}, seed + 2, false));
    out.push_back(run_case("remainder dk 33, dv 31, r 3", {4, 2, 6, 33, 31}, seed + 3, false));
    out.push_back(run_case("remainder dk 67, dv 5, special gates", {8, 3, 3, 67, 5}, seed + 4, true));
  }
  if (scope_has_real(scope)) {
    // A17B: Hk 16, Hv 64; A3B: Hk 16, Hv 32; dk = dv = 128 (docs/ops/models.md "Shape constants").
    out.push_back(run_case("A17B 16 tokens", {16, 16, 64, 128, 128}, seed + 10, false));
    out.push_back(run_case("A17B 6 tokens, g=0 / beta 0,1", {6, 16, 64, 128, 128}, seed + 11, true));
    out.push_back(run_case("A3B 16 tokens", {16, 16, 32, 128, 128}, seed + 12, false));
  }
  return out;
}

}  // namespace moe
