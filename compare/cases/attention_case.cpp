// Cases of gated GQA attention (kernels_cpu/ops/attention.h) and of its five stage ops
// (compare/manifest/chains.cpp): kv_append -> attention_scores -> attention_softmax -> attention_values
// -> attention_gate. Every op here shares AttentionParams' variables (tokens, q_heads,
// kv_heads, head_dim, past, capacity, scale), so a stage kernel's manifest reads the same names
// in its own cases and in the whole op's chain.
//
// Intermediate layouts (the stage contracts, compare/shaders/attention_*.comp):
//   scores, probs [tokens, q_heads, L], L = past + tokens (row (t, h) at (t * H + h) * L);
//     scores = -inf and probs = 0 at the masked positions p >= past + t + 1;
//   attn [tokens, q_heads * head_dim] (the output's layout, before the gate).
// A stage case's inputs are the f32-rounded f64 truth of the stages before it, and its truth is
// recomputed in f64 from exactly those inputs, so each stage is judged alone. The whole op's
// cases carry scores, probs and attn as output tensors without a decision (the chain's
// scratch) and decide o and the caches.
//
// Error model: the spec's (kernels_cpu/spec/attention_spec.h, spec/attention_bound.h) under the
// device's model with every add, subtract, multiply and fma within 1 ULP (2u, u = 2^-24): the
// Vulkan rules call them "correctly rounded", which allows either neighbour unless a shader fixes
// RoundingModeRTE (appendices/spirvenv.adoc); exp and division as decide/precision.h holds them
// (the rules or the device's calibrated budgets). The stage bounds below are first order in u.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <tuple>

#include "compare/cases/bound_mode.h"
#include "compare/cases/case_util.h"
#include "compare/cases/instances.h"
#include "core/check.h"
#include "core/math.h"
#include "ops/attention.h"
#include "spec/attention_spec.h"

namespace moe::compare {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

PrecisionModel vulkan_model() {
  PrecisionModel m = device_model();
  m.u = 2 * kU32;
  m.sum = [](double n) { return sum_gamma(n, 2 * kU32); };
  return m;
}

std::vector<float> to_f32(const std::vector<double>& x) { return std::vector<float>(x.begin(), x.end()); }

// ---- Stage truths in f64 from the f32 inputs, and their bounds.

// scores[t][h][p] = dot(q, K[p][g]) * scale, -inf where masked. Bound: the dot in any order
// (fma or not, subgroup tree) m.sum(D) A, A = sum_d |q_d K_pd|; times scale (an f32 value,
// exact in the truth) one rounding: |s^ - s| <= scale m.sum(D) A (1 + u) + u |s|; products
// flushed from the subnormal range add at most 2^-126 each: D 2^-126 scale, plus the smallest
// normal for s itself. Masked entries: bound 0 (the -inf must match, the Inf rule).
void scores_truth(const AttentionParams& p, const std::vector<float>& q, const std::vector<float>& kc,
                  const PrecisionModel& m, std::vector<double>& s, std::vector<double>& bound) {
  const int64_t T = p.tokens, H = p.q_heads, D = p.head_dim, G = H / p.kv_heads, row = p.kv_heads * D;
  const int64_t L = p.past + T;
  const double scale = p.scale, gam = m.sum(double(D));
  s.assign(size_t(T * H * L), kNegInf), bound.assign(s.size(), 0.0);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t pos = 0; pos < p.past + t + 1; ++pos) {
        const float* qr = q.data() + (t * H + h) * D;
        const float* kr = kc.data() + pos * row + (h / G) * D;
        double dot = 0, abs = 0;
        for (int64_t d = 0; d < D; ++d) dot += double(qr[d]) * kr[d], abs += std::fabs(double(qr[d]) * kr[d]);
        const size_t i = size_t((t * H + h) * L + pos);
        s[i] = dot * scale;
        bound[i] = scale * gam * abs * (1 + m.u) + m.u * std::fabs(s[i]) + scale * double(D) * kMinNormal32 +
                   kMinNormal32;
      }
}

// probs over [0, len) from f32 scores s (exact inputs), m = max s: the exponent s_p - m is
// rounded once (u |x_p|, moving e_p by a factor exp(u |x_p|)) and exp adds exp_rel(x^_p), so
// e^_p = e_p (1 + eps_p), eps_p = expm1(u|x_p|)(1 + r_p) + r_p, r_p = exp_rel(|x_p|(1 + u)).
// The sum S^ of len terms in any order: within m.sum(len) of sum e^_p = S (1 + sum P_p eps_p),
// |sum P_p eps_p| <= ebar. 1/S^ (division_rel) and e^ * inv (u). Hence P^_p / P_p lies in
//   [(1 - eps_p)(1 - div)(1 - u) / ((1 + ebar)(1 + gamma)), (1 + eps_p)(1 + div)(1 + u) / ((1 - ebar)(1 - gamma))]
// and the upper end minus 1 bounds both sides (each lower factor is >= 1 - its upper excess).
// Underflow: an e_p below 2^-126 may be flushed to 0 (2^-126 / S^ <= 2^-126 (1 + 7u) absolute,
// S^ >= exp(0) = 1 within 6u) and the flushed terms move S by at most len 2^-126: + 2 2^-126 +
// P_p len 2^-126. Masked positions: exactly 0 (bound 0).
void softmax_truth(const AttentionParams& p, const std::vector<float>& s, const PrecisionModel& m,
                   std::vector<double>& P, std::vector<double>& bound) {
  const int64_t T = p.tokens, H = p.q_heads, L = p.past + T;
  P.assign(s.size(), 0.0), bound.assign(s.size(), 0.0);
  std::vector<double> eps(static_cast<size_t>(L));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t len = p.past + t + 1, base = (t * H + h) * L;
      double mx = s[size_t(base)];
      for (int64_t i = 1; i < len; ++i) mx = std::max(mx, double(s[size_t(base + i)]));
      double sum = 0;
      for (int64_t i = 0; i < len; ++i) sum += (P[size_t(base + i)] = std::exp(double(s[size_t(base + i)]) - mx));
      double ebar = 0;
      for (int64_t i = 0; i < len; ++i) {
        const double x = std::fabs(double(s[size_t(base + i)]) - mx), r = m.exp_rel(x * (1 + m.u));
        eps[size_t(i)] = std::expm1(m.u * x) * (1 + r) + r;
        P[size_t(base + i)] /= sum;
        ebar += P[size_t(base + i)] * eps[size_t(i)];
      }
      const double gam = m.sum(double(len));
      for (int64_t i = 0; i < len; ++i) {
        const double hi = (1 + eps[size_t(i)]) * (1 + m.division_rel) * (1 + m.u) / ((1 - ebar) * (1 - gam));
        const double Pi = P[size_t(base + i)];
        bound[size_t(base + i)] = Pi * (hi - 1) + 2 * kMinNormal32 + Pi * double(len) * kMinNormal32;
      }
    }
}

// attn[t][h*D + d] = sum_{p < len} P_p V_pd from f32 probs: len products and sums in any order,
// m.sum(len) sum_p |P_p V_pd|, plus 2^-126 per product flushed from the subnormal range.
void values_truth(const AttentionParams& p, const std::vector<float>& P, const std::vector<float>& vc,
                  const PrecisionModel& m, std::vector<double>& attn, std::vector<double>& bound) {
  const int64_t T = p.tokens, H = p.q_heads, D = p.head_dim, G = H / p.kv_heads, row = p.kv_heads * D;
  const int64_t L = p.past + T;
  attn.assign(size_t(T * H * D), 0.0), bound.assign(attn.size(), 0.0);
  std::vector<double> abs(static_cast<size_t>(D));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t len = p.past + t + 1;
      double* a = attn.data() + (t * H + h) * D;
      std::fill(abs.begin(), abs.end(), 0.0);
      for (int64_t pos = 0; pos < len; ++pos) {
        const double w = P[size_t((t * H + h) * L + pos)];
        const float* vr = vc.data() + pos * row + (h / G) * D;
        for (int64_t d = 0; d < D; ++d) a[d] += w * vr[d], abs[size_t(d)] += std::fabs(w * vr[d]);
      }
      const double gam = m.sum(double(len));
      for (int64_t d = 0; d < D; ++d)
        bound[size_t((t * H + h) * D + d)] = gam * abs[size_t(d)] + double(len) * kMinNormal32;
    }
}

// Floating-point operations of one call (2 per multiply-add in scores and values), for --perf.
double attention_flops(const AttentionParams& p) {
  double f = 0;
  for (int64_t t = 0; t < p.tokens; ++t) f += 4.0 * double(p.q_heads * p.head_dim) * double(p.past + t + 1);
  return f;
}

// ---- Stage cases: one shape, one stage.

OpCase stage_case(const std::string& op, const AttentionShape& sh, uint64_t seed) {
  const AttentionParams& p = sh.p;
  const PrecisionModel m = vulkan_model();
  OpCase c = new_case(op, sh.label, seed);
  set_vars(c, p);
  const AttentionInputs in = attention_inputs(p, seed);
  std::vector<float> kc, vc;
  attention_append(p, in, kc, vc);
  const int64_t n_s = p.tokens * p.q_heads * (p.past + p.tokens), n_o = p.tokens * p.q_heads * p.head_dim;
  if (op == "kv_append") {
    c.tensors["k"] = f32_tensor(in.k), c.tensors["v"] = f32_tensor(in.v);
    c.tensors["k_cache"] = f32_tensor(in.k_cache), c.tensors["v_cache"] = f32_tensor(in.v_cache);
    // The whole caches, exactly: rows [past, past + T) replaced, the junk rows after them and
    // the earlier rows untouched (a write to a wrong row fails here).
    set_exact_output(c, "k_cache", kc), set_exact_output(c, "v_cache", vc);
    return c;
  }
  std::vector<double> s, sb, P, pb, a, ab;
  scores_truth(p, in.q, kc, m, s, sb);
  if (op == "attention_scores") {
    c.tensors["q"] = f32_tensor(in.q), c.tensors["k_cache"] = f32_tensor(kc);
    c.tensors["scores"] = output_f32(n_s);
    set_reduction_output(c, "scores", s, sb);
    c.flops = 2.0 * double(n_s) * double(p.head_dim);
    return c;
  }
  const std::vector<float> s32 = to_f32(s);
  softmax_truth(p, s32, m, P, pb);
  if (op == "attention_softmax") {
    c.tensors["scores"] = f32_tensor(s32), c.tensors["probs"] = output_f32(n_s);
    set_reduction_output(c, "probs", P, pb);
    return c;
  }
  const std::vector<float> P32 = to_f32(P);
  values_truth(p, P32, vc, m, a, ab);
  if (op == "attention_values") {
    c.tensors["probs"] = f32_tensor(P32), c.tensors["v_cache"] = f32_tensor(vc);
    c.tensors["attn"] = output_f32(n_o);
    set_reduction_output(c, "attn", a, ab);
    c.flops = attention_flops(p) / 2;
    return c;
  }
  MOE_CHECK(op == "attention_gate", "attention cases: no stage '" << op << "'");
  const std::vector<float> a32 = to_f32(a);
  std::vector<double> o(a32.size());
  OutputSpec spec;
  spec.name = "o", spec.kind = Kind::Elementwise;
  // The gate's relative error in ULP of the exact result (one ULP of y is more than u|y|).
  for (size_t i = 0; i < o.size(); ++i) {
    o[i] = double(a32[i]) * sigmoid(double(in.gate[i]));
    spec.ulp_budget.push_back(attention_gate_rel(in.gate[i], m) / kU32);
  }
  c.tensors["attn"] = f32_tensor(a32), c.tensors["gate"] = f32_tensor(in.gate);
  c.tensors["o"] = output_f32(n_o);
  c.outputs["o"] = spec;
  c.truth["o"] = std::move(o);
  return c;
}

// ---- Whole-op cases.

void add_chain_scratch(OpCase& c, const AttentionParams& p, int64_t max_L) {
  // The stage chain's intermediates, no decision: sized for the longest row of any step.
  c.tensors["scores"] = output_f32(p.tokens * p.q_heads * max_L);
  c.tensors["probs"] = output_f32(p.tokens * p.q_heads * max_L);
  c.tensors["attn"] = output_f32(p.tokens * p.q_heads * p.head_dim);
}

std::vector<float> slice(const std::vector<float>& x, int64_t i, int64_t n) {
  return std::vector<float>(x.begin() + i * n, x.begin() + (i + 1) * n);
}

// Multi-step cases of the whole op ("attention") or of its stateful stage ("kv_append"):
// sh.variant.steps consecutive calls of T = p.tokens / steps tokens each (T = 1: decode, one token
// per dispatch; T > 1: a prefill in chunks) on caches that stay on the device, uploaded once with
// p.past earlier rows. Step s uploads its tokens' k, v (and q, gate), runs with past = p.past + s T
// and decides both whole caches (the rows appended so far, the junk after them; a row appended by
// an earlier step and lost or moved fails here) and, for the whole op, o.
OpCase steps_case(const std::string& op, const AttentionShape& sh, uint64_t seed) {
  const AttentionParams& pa = sh.p;  // capacity past0 + steps T + 2; inputs for every step
  const int64_t steps = sh.variant.steps;
  const AttentionInputs in = attention_inputs(pa, seed);
  const bool whole = op == "attention";
  MOE_CHECK(whole || op == "kv_append", "attention cases: no multi-step cases for '" << op << "'");
  AttentionParams p = pa;
  p.tokens = pa.tokens / steps;
  OpCase c = new_case(op, sh.label, seed);
  set_vars(c, p);
  c.params += " steps=" + std::to_string(steps);
  const int64_t HD = p.tokens * p.q_heads * p.head_dim, row = p.tokens * p.kv_heads * p.head_dim;
  c.tensors["k"] = f32_tensor(slice(in.k, 0, row)), c.tensors["v"] = f32_tensor(slice(in.v, 0, row));
  c.tensors["k_cache"] = f32_tensor(in.k_cache), c.tensors["v_cache"] = f32_tensor(in.v_cache);
  if (whole) {
    c.tensors["q"] = f32_tensor(slice(in.q, 0, HD)), c.tensors["gate"] = f32_tensor(slice(in.gate, 0, HD));
    c.tensors["o"] = output_f32(HD);
    add_chain_scratch(c, p, pa.past + pa.tokens);
  }
  const PrecisionModel m = vulkan_model();
  std::vector<float> kc = in.k_cache, vc = in.v_cache;  // the host's mirror of the device caches
  for (int64_t s = 0; s < steps; ++s) {
    p.past = pa.past + s * p.tokens;
    CaseStep st;
    st.label = "t" + std::to_string(p.past);
    const std::vector<float> q = slice(in.q, s, HD), g = slice(in.gate, s, HD);
    const std::vector<float> k = slice(in.k, s, row), v = slice(in.v, s, row);
    st.upload["k"] = f32_tensor(k), st.upload["v"] = f32_tensor(v);
    st.vars["past"] = double(p.past);
    std::vector<float> o(static_cast<size_t>(HD));
    attention_ref<double>(p, q, g, k, v, kc, vc, o);  // appends to the mirror
    if (whole) {
      st.upload["q"] = f32_tensor(q), st.upload["gate"] = f32_tensor(g);
      set_reduction_output(st, "o", widen(o), attention_bound(p, q, g, kc, vc, o, 0, m));
      c.flops += attention_flops(p);
    }
    set_exact_output(st, "k_cache", kc), set_exact_output(st, "v_cache", vc);
    c.steps.push_back(std::move(st));
  }
  return c;
}

// The stage list's single-call shapes (kv_append's own multi-step cases aside).
std::vector<OpCase> stage_cases(const std::string& op, bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  for (const AttentionShape& sh : attention_stage_shapes(rem, real))
    if (sh.variant.steps == 1) out.push_back(stage_case(op, sh, seed + sh.seed_offset));
  return out;
}

// Softmax is shift-invariant, so a max that misses a score or takes one too many goes unseen
// while all scores lie within ~88 of each other (exp neither overflows nor underflows). Here each
// row's largest score stands 100 above the rest, at position `spike`, and the causally masked
// entries of the score rows (p >= len: never part of a row's softmax) hold 1000: a max that misses
// the spike overflows exp, one that reads past the row's length underflows every exp, and
// exp(s + max) for exp(s - max) overflows. Spikes: p % 256 == 255 (the last subgroup of any
// workgroup of 64, 128 or 256 lanes), and 256 (the first position a loop over 256 lanes striding
// 257 skips). T 1 is the decode step engines specialise for.
OpCase softmax_spread_case(uint64_t seed, int64_t T, int64_t spike) {
  const AttentionParams p{T, 4, 2, 64, 300, 300 + T + 2, 1.0f / std::sqrt(64.0f)};
  OpCase c = new_case("attention_softmax",
                      "T " + std::to_string(T) + " past 300 G2 D64 max 100 above the rest at " + std::to_string(spike),
                      seed);
  set_vars(c, p);
  const PrecisionModel m = vulkan_model();
  const AttentionInputs in = attention_inputs(p, seed);
  std::vector<float> kc, vc;
  attention_append(p, in, kc, vc);
  std::vector<double> s, sb, P, pb;
  scores_truth(p, in.q, kc, m, s, sb);
  std::vector<float> s32 = to_f32(s);
  const int64_t L = p.past + p.tokens;
  for (int64_t t = 0; t < p.tokens; ++t)
    for (int64_t h = 0; h < p.q_heads; ++h) {
      const int64_t len = p.past + t + 1, base = (t * p.q_heads + h) * L;
      float mx = s32[size_t(base)];
      for (int64_t i = 1; i < len; ++i) mx = std::max(mx, s32[size_t(base + i)]);
      s32[size_t(base + spike)] = mx + 100.0f;
      for (int64_t i = len; i < L; ++i) s32[size_t(base + i)] = 1000.0f;
    }
  softmax_truth(p, s32, m, P, pb);
  c.tensors["scores"] = f32_tensor(s32), c.tensors["probs"] = output_f32(int64_t(s32.size()));
  set_reduction_output(c, "probs", P, pb);
  return c;
}

}  // namespace

OpCase attention_instance(const std::string& label, uint64_t seed, const AttentionParams& p0, std::span<const float> q,
                          std::span<const float> gate, std::span<const float> k, std::span<const float> v,
                          std::span<const float> k_cache, std::span<const float> v_cache) {
  // The kernels get the scale as an f32 push constant: the truth uses that very value.
  AttentionParams p = p0;
  if (p.scale == 0.0f) p.scale = 1.0f / std::sqrt(float(p.head_dim));
  OpCase c = new_case("attention", label, seed);
  set_vars(c, p);
  std::vector<float> kc(k_cache.begin(), k_cache.end()), vc(v_cache.begin(), v_cache.end()), o(q.size());
  attention_ref<double>(p, q, gate, k, v, kc, vc, o);
  c.tensors["q"] = f32_tensor(q), c.tensors["gate"] = f32_tensor(gate);
  c.tensors["k"] = f32_tensor(k), c.tensors["v"] = f32_tensor(v);
  c.tensors["k_cache"] = f32_tensor(k_cache), c.tensors["v_cache"] = f32_tensor(v_cache);
  c.tensors["o"] = output_f32(int64_t(o.size()));
  add_chain_scratch(c, p, p.past + p.tokens);
  set_reduction_output(c, "o", widen(o), attention_bound(p, q, gate, kc, vc, o, 0, vulkan_model()));
  set_exact_output(c, "k_cache", kc), set_exact_output(c, "v_cache", vc);
  c.flops = attention_flops(p);
  return c;
}

std::vector<OpCase> kv_append_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out = stage_cases("kv_append", rem, real, seed);
  for (const AttentionShape& sh : attention_stage_shapes(rem, real))
    if (sh.variant.steps > 1) out.push_back(steps_case("kv_append", sh, seed + sh.seed_offset));
  return out;
}
std::vector<OpCase> attention_scores_cases(bool rem, bool real, uint64_t seed) {
  return stage_cases("attention_scores", rem, real, seed);
}
std::vector<OpCase> attention_softmax_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out = stage_cases("attention_softmax", rem, real, seed);
  if (rem)
    for (auto [T, spike, offset] : {std::tuple{3, 255, 977}, {1, 255, 978}, {1, 256, 979}})
      out.push_back(softmax_spread_case(seed + offset, T, spike));
  return out;
}
std::vector<OpCase> attention_values_cases(bool rem, bool real, uint64_t seed) {
  return stage_cases("attention_values", rem, real, seed);
}
std::vector<OpCase> attention_gate_cases(bool rem, bool real, uint64_t seed) {
  return stage_cases("attention_gate", rem, real, seed);
}

std::vector<OpCase> attention_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  for (const AttentionShape& sh : attention_shapes(rem, real)) {
    if (!sh.variant.gpu) continue;
    const uint64_t sd = seed + sh.seed_offset;
    if (sh.variant.steps > 1) {
      out.push_back(steps_case("attention", sh, sd));
    } else {
      const AttentionInputs in = attention_inputs(sh.p, sd);
      out.push_back(attention_instance(sh.label, sd, sh.p, in.q, in.gate, in.k, in.v, in.k_cache, in.v_cache));
    }
  }
  return out;
}

}  // namespace moe::compare
