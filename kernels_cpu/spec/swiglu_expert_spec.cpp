#include "spec/swiglu_expert_spec.h"

#include <cmath>

#include "core/check_util.h"
#include "core/rng.h"
#include "core/test_data.h"

namespace moe {

SwigluExpertInputs swiglu_expert_inputs(const SwigluExpertParams& p, uint64_t seed) {
  Rng rng(seed);
  return {random_expert(rng.fork(1), p.hidden, p.inter, p.bits), rng.fork(2).activations(p.tokens * p.hidden)};
}

std::string expert_label(const std::string& what, const SwigluExpertParams& p) {
  return what + " T " + std::to_string(p.tokens) + " d " + std::to_string(p.hidden) + " I " + std::to_string(p.inter) +
         " " + std::to_string(p.bits) + "-bit";
}

std::vector<SwigluExpertShape> swiglu_expert_shapes(bool remainders, bool real) {
  std::vector<SwigluExpertShape> out;
  auto add = [&](const std::string& what, SwigluExpertParams p, uint64_t offset, bool cpu = true) {
    out.push_back({expert_label(what, p), p, offset, SwigluExpertVariant{.cpu = cpu}});
  };
  auto cpu_only = [&](std::string label, SwigluExpertParams p, uint64_t offset, bool via_blob = false) {
    out.push_back({std::move(label), p, offset, SwigluExpertVariant{.via_blob = via_blob, .gpu = false}});
  };
  if (remainders) {
    add("remainder", {1, 64, 64, 4}, 1);
    add("remainder", {2, 192, 128, 4}, 2);
    add("remainder", {7, 64, 320, 4}, 3);
    add("remainder", {16, 128, 192, 4}, 4);
    add("remainder partial tile", {67, 64, 64, 4}, 5);
    // Other widths, for engines' kernels (the bundled chain's matmul_q4 skips them).
    add("remainder", {3, 128, 192, 8}, 6);
    add("remainder", {3, 128, 192, 2}, 7);
    // Past the 8192-float staging of x (gate/up's cols = d) and of act (down's cols = I), one
    // token (decode).
    add("remainder", {1, 8256, 64, 4}, 8);
    add("remainder", {1, 128, 8256, 4}, 9);
  }
  if (real) {
    // Routed and shared experts share their shapes (docs/ops/verification.md "Shapes to cover"):
    // A17B d 4096 I 1024, A3B d 2048 I 512.
    add("A17B expert", {1, 4096, 1024, 4}, 20);
    add("A17B expert", {16, 4096, 1024, 4}, 21, false);
    add("A3B expert", {1, 2048, 512, 4}, 22);
    add("A3B expert", {16, 2048, 512, 4}, 23, false);
  }
  if (remainders)  // smallest legal dims (one group) and odd group counts, every bit width
    for (int bits : {2, 4, 8}) {
      cpu_only("remainder d 64 I 64", {3, 64, 64, bits}, uint64_t(bits));
      cpu_only("remainder d 4160 I 192", {2, 4160, 192, bits}, 10 + uint64_t(bits));
      cpu_only("remainder d 192 I 4160", {2, 192, 4160, bits}, 20 + uint64_t(bits));
    }
  if (real) {
    cpu_only("A17B expert 4-bit blob", {1, 4096, 1024, 4}, 100, true);
    cpu_only("A17B expert 2-bit blob", {1, 4096, 1024, 2}, 101, true);
    cpu_only("A17B shared expert", {1, 4096, 1024, 4}, 102);
    cpu_only("A3B expert 4-bit blob, 4 tokens", {4, 2048, 512, 4}, 103, true);
  }
  return out;
}

ExpertGateUpInputs expert_gate_up_inputs(const SwigluExpertParams& p, uint64_t seed, float x_scale) {
  Rng rng(seed);
  ExpertGateUpInputs in{random_quant(rng.fork(1), p.inter, p.hidden, p.bits),
                        random_quant(rng.fork(2), p.inter, p.hidden, p.bits),
                        rng.fork(3).activations(p.tokens * p.hidden)};
  for (float& v : in.x) v *= x_scale;
  return in;
}

std::vector<SpecShape<SwigluExpertParams, float>> expert_gate_up_shapes(bool remainders, bool real) {
  std::vector<SpecShape<SwigluExpertParams, float>> out;
  auto add = [&](const std::string& what, SwigluExpertParams p, uint64_t offset, float x_scale = 1.0f) {
    out.push_back({expert_label(what, p), p, offset, x_scale});
  };
  if (remainders) {
    add("remainder", {1, 64, 1, 4}, 1);
    add("remainder", {3, 64, 33, 4}, 2);
    add("remainder", {7, 192, 67, 4}, 3);
    add("remainder", {16, 320, 5, 4}, 4);
    add("remainder partial tile", {67, 128, 3, 4}, 5);
    add("remainder", {3, 4160, 33, 4}, 6);
    add("remainder", {2, 128, 33, 2}, 7);
    add("remainder", {7, 192, 67, 8}, 8);
    add("remainder", {9, 64, 17, 2}, 9);
    // |g| up to ~1000: exp(-g) overflows (silu -> -0) and vanishes (silu -> g).
    add("edge exp overflow (x * 300)", {4, 64, 67, 4}, 10, 300.0f);
    add("remainder", {1, 8256, 5, 4}, 11);
    add("remainder", {1, 16448, 3, 4}, 12);
    add("remainder", {1, 8256, 3, 8}, 13);
    add("remainder", {1, 192, 3, 4}, 14);  // decode, fewer rows than one workgroup of rows
  }
  if (real) {
    add("A17B expert", {1, 4096, 1024, 4}, 20);
    add("A17B expert", {16, 4096, 1024, 4}, 21);
    add("A17B expert (requantised)", {1, 4096, 1024, 2}, 22);
    add("A3B expert", {1, 2048, 512, 4}, 23);
    add("A3B expert", {16, 2048, 512, 4}, 24);
    add("A3B expert (requantised)", {1, 2048, 512, 2}, 25);
  }
  return out;
}

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

}  // namespace moe
