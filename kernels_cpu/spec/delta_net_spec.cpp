#include "spec/delta_net_spec.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/rng.h"

namespace moe {

DeltaNetInputs delta_net_inputs(const DeltaNetParams& p, uint64_t seed, bool special_gates) {
  Rng rng(seed);
  const int64_t T = p.tokens, Hk = p.k_heads, Hv = p.v_heads, dk = p.key_dim, dv = p.value_dim;
  DeltaNetInputs in;
  in.q = rng.fork(1).normal_vec(T * Hk * dk, 1.0);
  in.k = rng.fork(2).normal_vec(T * Hk * dk, 1.0);
  for (int64_t head = 0; head < T * Hk; ++head) {
    float* q = in.q.data() + head * dk;
    float* k = in.k.data() + head * dk;
    double nq = 0, nk = 0;
    for (int64_t i = 0; i < dk; ++i) nq += double(q[i]) * q[i], nk += double(k[i]) * k[i];
    for (int64_t i = 0; i < dk; ++i) {
      q[i] = float(q[i] / std::sqrt(nq * double(dk)));
      k[i] = float(k[i] / std::sqrt(nk));
    }
  }
  in.v = rng.fork(3).normal_vec(T * Hv * dv, 1.0);
  in.g = rng.fork(4).uniform_vec(T * Hv, 0.9f, 1.0f);
  in.beta = rng.fork(5).uniform_vec(T * Hv, 0.3f, 0.7f);
  in.state0 = rng.fork(6).uniform_vec(Hv * dv * dk, -0.01f, 0.01f);
  if (special_gates) {
    Rng rs = rng.fork(7);
    for (size_t i = 0; i < in.g.size(); ++i) {
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
  // decay_log: the same decay draws, handed over as their logs (ggml's g). A factor of 0 (a hard
  // reset) becomes kDeltaNetLogZero, whose exp is 0 in f32 and in f64.
  if (p.decay_log)
    for (float& g : in.g) g = g == 0.0f ? kDeltaNetLogZero : float(std::log(double(g)));
  return in;
}

std::vector<DeltaNetShape> delta_net_shapes(bool remainders, bool real) {
  std::vector<DeltaNetShape> out;
  auto add = [&](std::string label, int64_t T, int64_t Hk, int64_t Hv, int64_t dk, int64_t dv, uint64_t offset,
                 bool special, bool prefill) {
    out.push_back({std::move(label), DeltaNetParams{T, Hk, Hv, dk, dv}, offset, DeltaNetVariant{special, prefill}});
  };
  if (remainders) {
    add("remainder 1x1 heads, dk 1, dv 1, 16 steps", 16, 1, 1, 1, 1, 1, false, false);
    add("remainder dk 31, dv 33, r 2, 16 steps", 16, 1, 2, 31, 33, 2, false, false);
    add("remainder dk 33, dv 31, r 3, 16 steps", 16, 2, 6, 33, 31, 3, false, false);
    add("remainder dk 67, dv 5, special gates, 16 steps", 16, 3, 3, 67, 5, 4, true, false);
    add("remainder dk 257, dv 17, 16 steps", 16, 1, 1, 257, 17, 5, false, false);
    add("remainder prefill 9 tokens, dk 67, dv 35, r 2", 9, 2, 4, 67, 35, 6, true, true);
    add("remainder Hv 130 Hk 65, dk 128, dv 128, 3 steps", 3, 65, 130, 128, 128, 7, false, false);
    add("remainder dk 520, dv 259, r 2, 3 steps", 3, 1, 2, 520, 259, 8, false, false);
    // Power-of-two heads narrower than a subgroup of 32 (engines that build a pipeline per
    // dk = dv in 16..128, e.g. ggml's, reduce over part of a subgroup there), prefill so token
    // offsets past the first are exercised, and Hv/Hk 2 with 3 k heads.
    add("remainder prefill 5 tokens, dk 16, dv 16, Hk 3, Hv 6", 5, 3, 6, 16, 16, 9, false, true);
    add("remainder prefill 3 tokens, dk 32, dv 32, Hk 1, Hv 3", 3, 1, 3, 32, 32, 15, true, true);
  }
  if (real) {
    add("A17B 16 decode steps", 16, 16, 64, 128, 128, 10, false, false);
    add("A3B 16 decode steps", 16, 16, 32, 128, 128, 11, false, false);
    add("A17B 8 decode steps, g=0 / beta 0,1", 8, 16, 64, 128, 128, 12, true, false);
    add("A3B prefill 32 tokens", 32, 16, 32, 128, 128, 13, false, true);
    add("A17B prefill 16 tokens", 16, 16, 64, 128, 128, 14, false, true);
  }
  return out;
}

void delta_net_token_step(const DeltaNetParams& p, const DeltaNetInputs& in, int64_t t, std::vector<float>& R,
                          DeltaNetErrorTracker& tr, float* o, double* o_bound, const PrecisionModel& m) {
  const int64_t Hk = p.k_heads, Hv = p.v_heads, dk = p.key_dim, dv = p.value_dim;
  DeltaNetParams p1 = p;
  p1.tokens = 1;
  const std::vector<float> R0 = R;
  auto sub = [](const std::vector<float>& v, int64_t off, int64_t n) {
    return std::span<const float>(v).subspan(size_t(off), size_t(n));
  };
  delta_net_ref<double>(p1, sub(in.q, t * Hk * dk, Hk * dk), sub(in.k, t * Hk * dk, Hk * dk),
                        sub(in.v, t * Hv * dv, Hv * dv), sub(in.g, t * Hv, Hv), sub(in.beta, t * Hv, Hv), R,
                        std::span<float>(o, size_t(Hv * dv)));
  delta_net_token_bound(p, in, t, R0, R, std::span<const float>(o, size_t(Hv * dv)), tr, o_bound, m);
}

void delta_net_token_bound(const DeltaNetParams& p, const DeltaNetInputs& in, int64_t t, const std::vector<float>& R0,
                           const std::vector<float>& R, std::span<const float> o1, DeltaNetErrorTracker& tr,
                           double* o_bound, const PrecisionModel& m) {
  const int64_t Hk = p.k_heads, Hv = p.v_heads, dk = p.key_dim, dv = p.value_dim;
  const double u = m.u, g_kv = m.sum(double(dk + 1)), g_o = m.sum(double(dk));
  // out_scale: o's error scales with it, and its product (or a product of q by it first) rounds
  // once more: u |scale| sum |S1_i q_i|. None for a scale of 1 (no multiply).
  const double scale = std::fabs(double(p.out_scale)), scale_round = p.out_scale == 1.0f ? 0.0 : u * scale;
  std::vector<double> pr(static_cast<size_t>(dk)), loc(static_cast<size_t>(dk)), s1m(static_cast<size_t>(dk));
  for (int64_t h = 0; h < Hv; ++h) {
    const int64_t hk = delta_net_qk_head(p, h);
    const float* qh = in.q.data() + (t * Hk + hk) * dk;
    const float* kh = in.k.data() + (t * Hk + hk) * dk;
    // decay_log: the factor is exp of the f32 input; the implementation's exp adds its relative
    // error ex to the decayed state s = g r, like s's own rounding (first order: the
    // propagation keeps the exact factor).
    const double g_in = in.g[size_t(t * Hv + h)], bh = in.beta[size_t(t * Hv + h)];
    const double gh = p.decay_log ? std::exp(g_in) : g_in, ex = p.decay_log ? m.exp_rel(g_in) : 0.0;
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
      const double D = bh * (g_kv + ex) * M + 2 * u * dmag;
      double loc2 = 0, qp = 0, ql = 0, om = 0;
      for (int64_t i = 0; i < dk; ++i) {
        const double ak = std::fabs(double(kh[i])), aq = std::fabs(double(qh[i]));
        pr[size_t(i)] = gh * (b[i] + bh * ak * kappa);
        s1m[size_t(i)] = std::fabs(double(r1[i])) + pr[size_t(i)];
        const double sm = gh * (std::fabs(double(r0[i])) + b[i]);
        loc[size_t(i)] = u * (sm + ak * dmag + s1m[size_t(i)]) + ex * sm + ak * D + u * s1m[size_t(i)] + kMinNormal32;
        loc2 += loc[size_t(i)] * loc[size_t(i)];
        qp += aq * pr[size_t(i)], ql += aq * loc[size_t(i)], om += s1m[size_t(i)] * aq;
      }
      const double eps1 = op * eps + std::sqrt(loc2);
      for (int64_t i = 0; i < dk; ++i) b[i] = std::min(pr[size_t(i)] + loc[size_t(i)], eps1);
      tr.eps[size_t(row)] = eps1;
      o_bound[vi + h * dv] = scale * (g_o * om + std::min(std::sqrt(qn2) * op * eps, qp) + ql) + scale_round * om +
                             u * std::fabs(double(o1[size_t(h * dv + vi)])) + kMinNormal32;
    }
  }
}

}  // namespace moe
