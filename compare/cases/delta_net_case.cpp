#include <algorithm>
#include <cmath>
#include <span>
#include <string>

#include "compare/cases/bound_mode.h"
#include "compare/cases/case_util.h"
#include "compare/cases/instances.h"
#include "core/rng.h"
#include "ops/delta_net.h"

namespace moe::compare {
namespace {

// ---- delta_net: inputs as the layer produces them (and as the op's self-check draws them):
// q, k per head L2-normalised (|k| = 1, |q| = 1/sqrt(dk): qk_norm), v ~ N(0, 1), g ~ U(0.9, 1),
// beta ~ U(0.3, 0.7), initial state 0.01 U(-1, 1) (mid-sequence). special_gates: each (token,
// head) instead draws one of g = 0 (hard reset), beta = 0, beta = 1, g = 0 with beta = 1,
// g = 1 with beta = 0 (identity), or the realistic gates (docs/ops/verification.md "Stateful ops").
struct Inputs {
  DeltaNetParams p;
  std::vector<float> q, k, v, g, beta, state0;
};

Inputs make_inputs(const DeltaNetParams& p, uint64_t seed, bool special_gates) {
  Rng rng(seed);
  const int64_t T = p.tokens, Hk = p.k_heads, Hv = p.v_heads, dk = p.key_dim, dv = p.value_dim;
  Inputs in;
  in.p = p;
  in.q = rng.fork(1).normal_vec(T * Hk * dk, 1.0);
  in.k = rng.fork(2).normal_vec(T * Hk * dk, 1.0);
  for (int64_t head = 0; head < T * Hk; ++head) {
    double nq = 0, nk = 0;
    for (int64_t i = 0; i < dk; ++i) nq += double(in.q[size_t(head * dk + i)]) * in.q[size_t(head * dk + i)];
    for (int64_t i = 0; i < dk; ++i) nk += double(in.k[size_t(head * dk + i)]) * in.k[size_t(head * dk + i)];
    for (int64_t i = 0; i < dk; ++i) {
      in.q[size_t(head * dk + i)] = float(in.q[size_t(head * dk + i)] / std::sqrt(nq * double(dk)));
      in.k[size_t(head * dk + i)] = float(in.k[size_t(head * dk + i)] / std::sqrt(nk));
    }
  }
  in.v = rng.fork(3).normal_vec(T * Hv * dv, 1.0);
  in.g = rng.fork(4).uniform_vec(T * Hv, 0.9f, 1.0f);
  in.beta = rng.fork(5).uniform_vec(T * Hv, 0.3f, 0.7f);
  in.state0 = rng.fork(6).uniform_vec(Hv * dv * dk, -0.01f, 0.01f);
  if (special_gates) {
    Rng rs = rng.fork(7);
    for (int64_t i = 0; i < T * Hv; ++i) {
      switch (rs.below(6)) {
        case 0: in.g[size_t(i)] = 0.0f; break;
        case 1: in.beta[size_t(i)] = 0.0f; break;
        case 2: in.beta[size_t(i)] = 1.0f; break;
        case 3: in.g[size_t(i)] = 0.0f, in.beta[size_t(i)] = 1.0f; break;
        case 4: in.g[size_t(i)] = 1.0f, in.beta[size_t(i)] = 0.0f; break;
        default: break;
      }
    }
  }
  return in;
}

// Free-running comparison: the kernel's state carries over from token to token on the device
// (never reset to the truth), so the bound must follow the recurrence. All first order in
// u = 2^-24. Per v-head h and state row r (S_h[vi][.], a dk-vector; rows are independent), one
// token is the affine map r -> A r + beta g v_vi k with A = g (I - beta k k^T) (symmetric), so
// the kernel's error e = r_gpu - r_truth evolves as
//     e' = A e + gamma - rho,
// gamma the kernel's rounding in this token, rho the truth's own rounding of its state to f32
// (every tier stores an f32 state). ||A||_2 = g max(1, |1 - beta |k|^2|), which is <= 1 for
// g in [0, 1], beta in [0, 1], |k| = 1 (q and k are l2-normed upstream): the recurrence is
// non-expansive and errors add up at most linearly over tokens; the bound uses the exact norm
// of the case's f32 k, so it holds whatever the inputs. Tracked per row:
//   eps  >= ||e||_2, and b_i >= |e_i| per element:
//   (A e)_i = g (e_i - beta k_i (k . e)), |k . e| <= kappa = min(|k| eps, sum |k_j| b_j)
//     -> p_i = g (b_i + beta |k_i| kappa);  ||A e|| <= ||A|| eps.
//   Local error of the kernel's step, computed from magnitudes m_i = |r_i| + b_i of its own state
//   (the truth's plus the error so far), as the op's self-check derives it:
//     s_i = g r_i rounds: u g m_i; kv = sum s_i k_i in any order (fused or not): gamma_{dk+1}
//     sum g m_i |k_i| = M; delta = (v - kv) beta: D = beta M + 2u |delta| (two roundings, |delta|
//     including the propagated beta g kappa); S1_i = s_i + k_i delta: u (g m_i + |k_i delta|
//     + |S1_i|) + |k_i| D; the truth's rounding rho_i: u |S1_i|; the smallest normal for
//     subnormal (flushed) elements:  loc_i.
//   b_i' = min(p_i + loc_i, eps'),  eps' = ||A|| eps + ||loc||_2.
// o = S1 . q read from the kernel's updated state: gamma_dk sum |S1_i q_i| (the dot in any
// order) + |q . (A e)| <= min(|q| ||A|| eps, sum |q_i| p_i) + sum |q_i| loc_i, + u |o| for the
// truth's rounding (it reads its f64 state) and the smallest normal.
// Option (b), steps isolated by re-uploading the truth's state, would give tighter bounds but
// would not see a kernel that corrupts what it carries over; (a) is the stronger test.
struct Tracker {
  std::vector<double> b;    // per state element
  std::vector<double> eps;  // per state row
};

// One token: the truth's state R (f32, as every tier stores it) advances in place; o and its
// bound are written; the tracker advances to the state after the token.
void token_step(const Inputs& in, int64_t t, std::vector<float>& R, Tracker& tr, float* o, double* o_bound) {
  const DeltaNetParams& p = in.p;
  const int64_t Hk = p.k_heads, Hv = p.v_heads, dk = p.key_dim, dv = p.value_dim, r = Hv / Hk;
  DeltaNetParams p1 = p;
  p1.tokens = 1;
  const std::vector<float> R0 = R;
  std::vector<float> o1(static_cast<size_t>(Hv * dv));
  auto sub = [](const std::vector<float>& v, int64_t off, int64_t n) {
    return std::span<const float>(v).subspan(size_t(off), size_t(n));
  };
  delta_net_ref<double>(p1, sub(in.q, t * Hk * dk, Hk * dk), sub(in.k, t * Hk * dk, Hk * dk),
                        sub(in.v, t * Hv * dv, Hv * dv), sub(in.g, t * Hv, Hv), sub(in.beta, t * Hv, Hv), R, o1);
  std::copy(o1.begin(), o1.end(), o);
  const double u = kU32, g_kv = sum_gamma(double(dk + 1)), g_o = sum_gamma(double(dk));
  std::vector<double> pr(static_cast<size_t>(dk)), loc(static_cast<size_t>(dk)), s1m(static_cast<size_t>(dk));
  for (int64_t h = 0; h < Hv; ++h) {
    const float* qh = in.q.data() + (t * Hk + h / r) * dk;
    const float* kh = in.k.data() + (t * Hk + h / r) * dk;
    const double gh = in.g[size_t(t * Hv + h)], bh = in.beta[size_t(t * Hv + h)];
    double kn2 = 0, qn2 = 0;
    for (int64_t i = 0; i < dk; ++i) kn2 += double(kh[i]) * kh[i], qn2 += double(qh[i]) * qh[i];
    const double op = gh * std::max(1.0, std::fabs(1.0 - bh * kn2));
    for (int64_t vi = 0; vi < dv; ++vi) {
      const int64_t row = h * dv + vi;
      const float* r0 = R0.data() + row * dk;
      const float* r1 = R.data() + row * dk;
      double* b = tr.b.data() + row * dk;
      const double eps = tr.eps[size_t(row)];
      double kb = 0, kv = 0, M = 0;
      for (int64_t i = 0; i < dk; ++i) {
        kb += std::fabs(double(kh[i])) * b[i];
        kv += gh * double(r0[i]) * kh[i];
        M += gh * (std::fabs(double(r0[i])) + b[i]) * std::fabs(double(kh[i]));
      }
      const double kappa = std::min(std::sqrt(kn2) * eps, kb);
      const double dmag = std::fabs((double(in.v[size_t((t * Hv + h) * dv + vi)]) - kv) * bh) + bh * gh * kappa;
      const double D = bh * g_kv * M + 2 * u * dmag;
      double loc2 = 0, qp = 0, ql = 0, om = 0;
      for (int64_t i = 0; i < dk; ++i) {
        const double ak = std::fabs(double(kh[i])), aq = std::fabs(double(qh[i]));
        pr[size_t(i)] = gh * (b[i] + bh * ak * kappa);
        s1m[size_t(i)] = std::fabs(double(r1[i])) + pr[size_t(i)];
        const double sm = gh * (std::fabs(double(r0[i])) + b[i]);
        loc[size_t(i)] = u * (sm + ak * dmag + s1m[size_t(i)]) + ak * D + u * s1m[size_t(i)] + kMinNormal32;
        loc2 += loc[size_t(i)] * loc[size_t(i)];
        qp += aq * pr[size_t(i)], ql += aq * loc[size_t(i)], om += s1m[size_t(i)] * aq;
      }
      const double eps1 = op * eps + std::sqrt(loc2);
      for (int64_t i = 0; i < dk; ++i) b[i] = std::min(pr[size_t(i)] + loc[size_t(i)], eps1);
      tr.eps[size_t(row)] = eps1;
      o_bound[vi + h * dv] = g_o * om + std::min(std::sqrt(qn2) * op * eps, qp) + ql +
                             u * std::fabs(double(o1[size_t(h * dv + vi)])) + kMinNormal32;
    }
  }
}

OutputSpec reduction(const std::string& name, std::vector<double> bound) {
  OutputSpec s;
  s.name = name, s.kind = Kind::Reduction, s.bound = std::move(bound);
  return s;
}

std::vector<float> slice(const std::vector<float>& v, int64_t off, int64_t n) {
  return std::vector<float>(v.begin() + off, v.begin() + off + n);
}

// Decode: one CaseStep per token (tokens = 1 per dispatch); the state stays on the device, and
// every step compares o and the whole state.
OpCase decode_case(const std::string& label, const DeltaNetParams& p, uint64_t seed, bool special_gates) {
  const Inputs in = make_inputs(p, seed, special_gates);
  const int64_t T = p.tokens, Hk = p.k_heads, Hv = p.v_heads, dk = p.key_dim, dv = p.value_dim;
  DeltaNetParams p1 = p;
  p1.tokens = 1;
  OpCase c = new_case("delta_net", label, seed);
  set_vars(c, p1);
  c.params += " steps=" + std::to_string(T);
  auto token_inputs = [&](int64_t t, std::map<std::string, HostTensor>& m) {
    m["q"] = f32_tensor(slice(in.q, t * Hk * dk, Hk * dk));
    m["k"] = f32_tensor(slice(in.k, t * Hk * dk, Hk * dk));
    m["v"] = f32_tensor(slice(in.v, t * Hv * dv, Hv * dv));
    m["g"] = f32_tensor(slice(in.g, t * Hv, Hv));
    m["beta"] = f32_tensor(slice(in.beta, t * Hv, Hv));
  };
  token_inputs(0, c.tensors);
  c.tensors["state"] = f32_tensor(in.state0);
  c.tensors["o"] = output_f32(Hv * dv);
  std::vector<float> R = in.state0, o(static_cast<size_t>(Hv * dv));
  Tracker tr{std::vector<double>(in.state0.size(), 0.0), std::vector<double>(size_t(Hv * dv), 0.0)};
  for (int64_t t = 0; t < T; ++t) {
    CaseStep st;
    st.label = "t=" + std::to_string(t);
    token_inputs(t, st.upload);
    std::vector<double> ob(static_cast<size_t>(Hv * dv));
    token_step(in, t, R, tr, o.data(), ob.data());
    st.outputs["o"] = reduction("o", std::move(ob));
    st.truth["o"] = widen(o);
    st.outputs["state"] = reduction("state", tr.b);
    st.truth["state"] = widen(R);
    c.steps.push_back(std::move(st));
  }
  c.flops = double(T * Hv * dv * dk * 7);
  return c;
}

// Prefill: one dispatch over T tokens; o of every token and the final state.
OpCase prefill_case(const std::string& label, const DeltaNetParams& p, uint64_t seed, bool special_gates) {
  const Inputs in = make_inputs(p, seed, special_gates);
  return delta_net_instance(label, seed, p, in.q, in.k, in.v, in.g, in.beta, in.state0);
}

DeltaNetParams params(int64_t T, int64_t Hk, int64_t Hv, int64_t dk, int64_t dv) {
  DeltaNetParams p;
  p.tokens = T, p.k_heads = Hk, p.v_heads = Hv, p.key_dim = dk, p.value_dim = dv;
  return p;
}

}  // namespace

OpCase delta_net_instance(const std::string& label, uint64_t seed, const DeltaNetParams& p, std::span<const float> q,
                          std::span<const float> k, std::span<const float> v, std::span<const float> g,
                          std::span<const float> beta, std::span<const float> state0) {
  Inputs in;
  in.p = p;
  in.q.assign(q.begin(), q.end()), in.k.assign(k.begin(), k.end()), in.v.assign(v.begin(), v.end());
  in.g.assign(g.begin(), g.end()), in.beta.assign(beta.begin(), beta.end());
  in.state0.assign(state0.begin(), state0.end());
  const int64_t T = p.tokens, Hv = p.v_heads, dv = p.value_dim;
  OpCase c = new_case("delta_net", label, seed);
  set_vars(c, p);
  c.tensors["q"] = f32_tensor(in.q);
  c.tensors["k"] = f32_tensor(in.k);
  c.tensors["v"] = f32_tensor(in.v);
  c.tensors["g"] = f32_tensor(in.g);
  c.tensors["beta"] = f32_tensor(in.beta);
  c.tensors["state"] = f32_tensor(in.state0);
  c.tensors["o"] = output_f32(T * Hv * dv);
  std::vector<float> R = in.state0, o(static_cast<size_t>(T * Hv * dv));
  std::vector<double> ob(o.size());
  Tracker tr{std::vector<double>(in.state0.size(), 0.0), std::vector<double>(size_t(Hv * dv), 0.0)};
  for (int64_t t = 0; t < T; ++t) token_step(in, t, R, tr, o.data() + t * Hv * dv, ob.data() + t * Hv * dv);
  c.outputs["o"] = reduction("o", std::move(ob));
  c.truth["o"] = widen(o);
  c.outputs["state"] = reduction("state", tr.b);
  c.truth["state"] = widen(R);
  c.flops = double(T * Hv * dv * p.key_dim * 7);
  return c;
}

std::vector<OpCase> delta_net_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  if (rem) {
    // dk around subgroup widths (lanes past dk idle; several elements per lane), dv around the
    // 16-row slices, ratios r = Hv / Hk of 1, 2, 3.
    out.push_back(decode_case("remainder 1x1 heads, dk 1, dv 1, 16 steps", params(16, 1, 1, 1, 1), seed + 1, false));
    out.push_back(decode_case("remainder dk 31, dv 33, r 2, 16 steps", params(16, 1, 2, 31, 33), seed + 2, false));
    out.push_back(decode_case("remainder dk 33, dv 31, r 3, 16 steps", params(16, 2, 6, 33, 31), seed + 3, false));
    out.push_back(decode_case("remainder dk 67, dv 5, special gates, 16 steps", params(16, 3, 3, 67, 5), seed + 4, true));
    out.push_back(decode_case("remainder dk 257, dv 17, 16 steps", params(16, 1, 1, 257, 17), seed + 5, false));
    out.push_back(prefill_case("remainder prefill 9 tokens, dk 67, dv 35, r 2", params(9, 2, 4, 67, 35), seed + 6, true));
    // Past the limits engines size for, one token per dispatch: 130 v heads (more than 64 or
    // 128) at the models' head size, and heads wider than 512 (dk 520, dv 259).
    out.push_back(decode_case("remainder Hv 130 Hk 65, dk 128, dv 128, 3 steps", params(3, 65, 130, 128, 128), seed + 7, false));
    out.push_back(decode_case("remainder dk 520, dv 259, r 2, 3 steps", params(3, 1, 2, 520, 259), seed + 8, false));
  }
  if (real) {
    // A17B: Hk 16, Hv 64; A3B: Hk 16, Hv 32; dk = dv = 128 (docs/ops/models.md "Shape constants").
    out.push_back(decode_case("A17B 16 decode steps", params(16, 16, 64, 128, 128), seed + 10, false));
    out.push_back(decode_case("A3B 16 decode steps", params(16, 16, 32, 128, 128), seed + 11, false));
    out.push_back(decode_case("A17B 8 decode steps, g=0 / beta 0,1", params(8, 16, 64, 128, 128), seed + 12, true));
    out.push_back(prefill_case("A3B prefill 32 tokens", params(32, 16, 32, 128, 128), seed + 13, false));
    out.push_back(prefill_case("A17B prefill 16 tokens", params(16, 16, 64, 128, 128), seed + 14, false));
  }
  return out;
}

}  // namespace moe::compare
