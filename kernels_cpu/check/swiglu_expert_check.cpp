#include <algorithm>
#include <cmath>

#include "core/expert_blob.h"
#include "core/params.h"
#include "core/rng.h"
#include "ops/swiglu_expert.h"

namespace moe {

// Error bound of one expert, per output element, first order in u (plus the few second-order
// products that are cheap to keep). Notation: W = q*s + b the dequantised weight (exact in f64),
// |W|x = sum_c |W_c| |x_c|, and the running sum
// R(W, x) = sum_k (|S_k| + |W_k x_k|) with S_k = sum_{c<=k} W_c x_c the exact partial sums in the
// f32 tier's column order (groups, words, values ascending = c ascending).
//
// 1. Projections g = Wg x, u = Wu x (n = d terms).
//    f32 tier: its order is fixed (docs/ops/quantized.md "Canonical CPU order"): t = fma(q, s, b)
//    rounds once (u |t|, q*s is exact) and acc = fma(t, x, acc) once per step (u |acc_k|), so the
//    running-error bound
//    |dg| <= u R(Wg, x) holds; it is ~sqrt(d) tighter than gamma(d) |Wg|x on random data.
//    Fast tier: matvec_q_fast computes the reference's terms fma(q, s, b) * x (one rounding of
//    the weight, none of the product when fused) and sums them in its own order (lanes, rows,
//    threads): |dg| <= gamma(d+2) |Wg|x, the any-order bound (loose by ~sqrt(d)).
//    Truth: f64 sums (gamma(d+2) in u64) then one rounding to f32: |dg| <= u|g| + gamma64 |Wg|x.
// 2. h = silu(g) u. silu is 1.1-Lipschitz (max |silu'| = 1.0998 at g = 2.4), so the propagated
//    error is 1.1 |dg| (|u| + |du|) + |silu(g)| |du|. Evaluation in f32: expf within 1 ulp (2u
//    relative), 1 + E adds u (the exp error is damped by E/(1+E) <= 1), the division u, the
//    product u: 5u relative on the computed h (f64 tier: 4 u64, then u for the store as f32).
//    When expf(-g) overflows (g < -88) the computed silu is -0 while the truth is below 1e-36
//    in magnitude: an absolute 1e-36 |u| covers it.
// 3. y = Wd h (n = I terms): y_tier - y = Wd (h_tier - h) + (rounding of the sum), so
//    |dy| <= |Wd| |dh| + (rounding): f32 tier u (R(Wd, h) + (I+1) |Wd| |dh|) (its partial sums
//    move by at most |Wd||dh|); fast tier |Wd| |dh| + gamma(I+2) |Wd|(|h| + |dh|); truth
//    |Wd| |dh_T| + gamma64 |Wd||h| + u |y| (the f32 store).
// The tier-vs-truth bound is the tier's bound plus the truth's, plus kMinNormal32 as a floor.
SwigluExpertBound swiglu_expert_bound(const SwigluExpertParams& p, const ExpertWeights& e, std::span<const float> x) {
  const int64_t d = p.hidden, I = p.inter;
  const double u = kU32, u64 = 0x1.0p-53;
  const double gd = gamma_n(double(d + 2)), gi = gamma_n(double(I + 2));  // fast tier, any order
  const double gd64 = gamma_n(double(d + 2), u64), gi64 = gamma_n(double(I + 2), u64);
  // exact = W v, absv = |W||v|, run = R(W, v) for every row of m; v in f64.
  struct Sums {
    std::vector<double> exact, absv, run;
    explicit Sums(int64_t n) : exact(n), absv(n), run(n) {}
  };
  auto matvec = [](const QuantMatrix& m, const double* v, Sums& o) {
    const int64_t groups = m.groups_per_row();
    for (int64_t r = 0; r < m.rows; ++r) {
      const uint32_t* wr = m.w + r * m.words_per_row();
      double acc = 0, a1 = 0, run = 0;
      for (int64_t g = 0; g < groups; ++g) {
        const double s = bf16_to_f32(m.scales[r * groups + g]), b = bf16_to_f32(m.biases[r * groups + g]);
        for (int64_t c = g * m.group_size; c < (g + 1) * m.group_size; ++c) {
          const double q = quant_code(wr, c, m.bits);
          const double w = q * s + b;
          acc += w * v[c];
          a1 += std::fabs(w) * std::fabs(v[c]);
          run += std::fabs(acc) + std::fabs(w * v[c]);
        }
      }
      o.exact[r] = acc, o.absv[r] = a1, o.run[r] = run;
    }
  };
  SwigluExpertBound out;
  out.exact.resize(p.tokens * d), out.ref32.resize(p.tokens * d), out.fast.resize(p.tokens * d);
  std::vector<double> xd(d), h(I), eh32(I), ehf(I), ehT(I);
  Sums G(I), U(I);
  for (int64_t t = 0; t < p.tokens; ++t) {
    for (int64_t c = 0; c < d; ++c) xd[c] = x[t * d + c];
    matvec(e.gate, xd.data(), G);
    matvec(e.up, xd.data(), U);
    for (int64_t i = 0; i < I; ++i) {
      const double g = G.exact[i], uu = U.exact[i];
      const double s = g / (1 + std::exp(-g));
      h[i] = s * uu;
      auto prop = [&](double dg, double du, double rel) {
        const double e1 = 1.1 * dg * (std::fabs(uu) + du) + std::fabs(s) * du + 1e-36 * (std::fabs(uu) + du);
        return e1 + rel * (std::fabs(h[i]) + e1);
      };
      eh32[i] = prop(u * G.run[i], u * U.run[i], 5 * u);
      ehf[i] = prop(gd * G.absv[i], gd * U.absv[i], 5 * u);
      ehT[i] = prop(u * std::fabs(g) + gd64 * G.absv[i], u * std::fabs(uu) + gd64 * U.absv[i], 4 * u64 + u);
    }
    // One pass over down for y and the three propagated terms |Wd| dh (|Wd|' for the fast tier).
    {
      const QuantMatrix& m = e.down;
      const int64_t groups = m.groups_per_row();
      for (int64_t r = 0; r < m.rows; ++r) {
        const uint32_t* wr = m.w + r * m.words_per_row();
        double acc = 0, ya = 0, run = 0, p32 = 0, pf = 0, pt = 0;
        for (int64_t g = 0; g < groups; ++g) {
          const double s = bf16_to_f32(m.scales[r * groups + g]), b = bf16_to_f32(m.biases[r * groups + g]);
          for (int64_t c = g * m.group_size; c < (g + 1) * m.group_size; ++c) {
            const double q = quant_code(wr, c, m.bits);
            const double w = q * s + b, aw = std::fabs(w);
            acc += w * h[c];
            ya += aw * std::fabs(h[c]);
            run += std::fabs(acc) + std::fabs(w * h[c]);
            p32 += aw * eh32[c];
            pf += aw * ehf[c];
            pt += aw * ehT[c];
          }
        }
        const int64_t j = t * d + r;
        out.exact[j] = acc;
        out.ref32[j] = p32 + u * (run + double(I + 1) * p32);
        out.fast[j] = pf + gi * (ya + pf);
        out.ref32[j] += pt + gi64 * ya + u * std::fabs(acc) + kMinNormal32;  // the truth's share
        out.fast[j] += pt + gi64 * ya + u * std::fabs(acc) + kMinNormal32;
      }
    }
  }
  return out;
}

namespace {

CheckResult run_case(const char* label, const SwigluExpertParams& p, uint64_t seed, bool via_blob) {
  Rng rng(seed);
  const ExpertStorage store = random_expert(rng.fork(1), p.hidden, p.inter, p.bits);
  std::vector<uint8_t> blob;
  ExpertWeights e = store.view();
  if (via_blob) {  // the engines' path: one packed blob read in place
    blob = pack_expert_blob(e);
    e = expert_from_blob(blob.data(), blob.size(), p.hidden, p.inter, p.bits);
  }
  const std::vector<float> x = rng.fork(2).activations(p.tokens * p.hidden);
  std::vector<float> truth(x.size()), r32(x.size()), fast(x.size());
  CheckResult res{"swiglu_expert", label, params_to_string(p), seed};
  res.truth_seconds = time_call([&] { swiglu_expert_ref<double>(p, e, x, truth); });
  res.ref32.seconds = time_call([&] { swiglu_expert_ref<float>(p, e, x, r32); });
  res.fast.seconds = time_call([&] { swiglu_expert_fast(p, e, x, fast); });
  const SwigluExpertBound b = swiglu_expert_bound(p, e, x);  // derivation above
  res.ref32.add("y", truth, r32, b.ref32);
  res.fast.add("y", truth, fast, b.fast);
  return res;
}

}  // namespace

std::vector<CheckResult> swiglu_expert_check(uint64_t seed, CheckScope scope) {
  std::vector<CheckResult> out;
  if (scope_has_remainders(scope)) {
    // Smallest legal dims (one group), odd group counts, and every bit width.
    for (int bits : {2, 4, 8}) {
      out.push_back(run_case("remainder d 64 I 64", {3, 64, 64, bits}, seed + bits, false));
      out.push_back(run_case("remainder d 4160 I 192", {2, 4160, 192, bits}, seed + 10 + bits, false));
      out.push_back(run_case("remainder d 192 I 4160", {2, 192, 4160, bits}, seed + 20 + bits, false));
    }
  }
  if (scope_has_real(scope)) {
    out.push_back(run_case("A17B expert 4-bit blob", {1, 4096, 1024, 4}, seed + 100, true));
    out.push_back(run_case("A17B expert 2-bit blob", {1, 4096, 1024, 2}, seed + 101, true));
    out.push_back(run_case("A17B shared expert", {1, 4096, 1024, 4}, seed + 102, false));
    out.push_back(run_case("A3B expert 4-bit blob, 4 tokens", {4, 2048, 512, 4}, seed + 103, true));
  }
  return out;
}

}  // namespace moe
