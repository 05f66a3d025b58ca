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
// Error model (Vulkan precision rules, appendices/spirvenv.adoc; u = 2^-24, first order in u
// unless written as a product): add, subtract, multiply and fma are "correctly rounded", which
// allows either neighbour, so each is within 1 ULP <= 2u relative (not u: the rounding mode is
// not fixed without RoundingModeRTE); exp within 3 + 2|x| ULP, i.e. (6 + 4|x|)u relative, and
// division within 2.5 ULP = 5u by the rules — the code takes both from decide/precision.h
// (exp_rel, division_rel), which holds the rules or the device's calibrated budgets. A sum of n terms in any order (sequential, subgroupAdd, shared
// memory tree) is within gamma_n(2u) * sum|terms| (Higham, the product roundings included).
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "compare/cases/bound_mode.h"
#include "compare/cases/case_util.h"
#include "compare/cases/instances.h"
#include "compare/decide/precision.h"
#include "core/check.h"
#include "core/math.h"
#include "core/rng.h"
#include "ops/attention.h"

namespace moe::compare {
namespace {

constexpr double kU2 = 2 * kU32;  // one "correctly rounded" Vulkan operation, relative
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

struct Shape {
  std::string label;
  int64_t H, Hkv, D, past, T;
  float scale = 0;  // 0: 1/sqrtf(D), the models' value
};

// The case's params: capacity leaves two junk rows after the appended ones, so a write one row
// too far lands inside the cache (decided exactly) instead of the guard. scale is the f32 value
// the kernel gets (a push constant), and the truth uses that very value.
AttentionParams params_of(const Shape& s) {
  AttentionParams p;
  p.tokens = s.T, p.q_heads = s.H, p.kv_heads = s.Hkv, p.head_dim = s.D, p.past = s.past;
  p.capacity = s.past + s.T + 2;
  p.scale = s.scale != 0 ? s.scale : 1.0f / std::sqrt(float(s.D));
  return p;
}

// Inputs with the statistics of a real layer (as kernels_cpu/check/attention_check.cpp): q per
// head RMS-normalised times a per-head gain in [0.25, 2.5] (flat to peaked attention); keys
// N(0, 1) around a per-(kv head, channel) mean N(0, 0.5) shared by all positions, as real keys
// are; values are activations (outlier channels x20); gate N(0, 2^2). Cache rows from `past`
// on hold junk (keys 1000 + i, values -7) that the append must overwrite exactly where it should.
struct Inputs {
  std::vector<float> q, gate, k, v, k_cache, v_cache;  // caches before the append
};

Inputs make_inputs(const AttentionParams& p, uint64_t seed) {
  const int64_t T = p.tokens, H = p.q_heads, D = p.head_dim, row = p.kv_heads * D;
  Rng rng(seed);
  Inputs in;
  std::vector<double> gain(static_cast<size_t>(H));
  Rng rg = rng.fork(2);
  for (double& g : gain) g = 0.25 + 2.25 * rg.uniform01();
  in.q = rng.fork(1).normal_vec(T * H * D, 1.0);
  for (int64_t i = 0; i < T * H * D; ++i) in.q[size_t(i)] = float(in.q[size_t(i)] * gain[size_t((i / D) % H)]);
  in.gate = rng.fork(3).normal_vec(T * H * D, 2.0);
  const std::vector<float> mean = rng.fork(4).normal_vec(row, 0.5);
  auto keys = [&](Rng r, int64_t rows) {
    std::vector<float> x = r.normal_vec(rows * row, 1.0);
    for (int64_t i = 0; i < rows * row; ++i) x[size_t(i)] += mean[size_t(i % row)];
    return x;
  };
  in.k = keys(rng.fork(5), T);
  in.v = rng.fork(6).activations(T * row);
  in.k_cache = keys(rng.fork(7), p.capacity);
  in.v_cache = rng.fork(8).activations(p.capacity * row);
  for (int64_t i = p.past * row; i < p.capacity * row; ++i)
    in.k_cache[size_t(i)] = 1000.0f + float(i % 4096), in.v_cache[size_t(i)] = -7.0f;
  return in;
}

// The caches after the append: rows [past, past + T) := k, v.
void append(const AttentionParams& p, const Inputs& in, std::vector<float>& kc, std::vector<float>& vc) {
  const int64_t row = p.kv_heads * p.head_dim;
  kc = in.k_cache, vc = in.v_cache;
  std::copy(in.k.begin(), in.k.end(), kc.begin() + p.past * row);
  std::copy(in.v.begin(), in.v.end(), vc.begin() + p.past * row);
}

std::vector<float> to_f32(const std::vector<double>& x) { return std::vector<float>(x.begin(), x.end()); }

// ---- Stage truths in f64 from the f32 inputs, and their bounds.

// scores[t][h][p] = dot(q, K[p][g]) * scale, -inf where masked. Bound: the dot in any order
// (fma or not, subgroup tree) gamma_D(2u) A, A = sum_d |q_d K_pd|; times scale (an f32 value,
// exact in the truth) one rounding: |s^ - s| <= scale gamma_D A (1 + 2u) + 2u |s|; products
// flushed from the subnormal range add at most 2^-126 each: D 2^-126 scale, plus the smallest
// normal for s itself. Masked entries: bound 0 (the -inf must match, the Inf rule).
void scores_truth(const AttentionParams& p, const std::vector<float>& q, const std::vector<float>& kc,
                  std::vector<double>& s, std::vector<double>& bound) {
  const int64_t T = p.tokens, H = p.q_heads, D = p.head_dim, G = H / p.kv_heads, row = p.kv_heads * D;
  const int64_t L = p.past + T;
  const double scale = p.scale, gam = sum_gamma(double(D), kU2);
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
        bound[i] = scale * gam * abs * (1 + kU2) + kU2 * std::fabs(s[i]) + scale * double(D) * kMinNormal32 +
                   kMinNormal32;
      }
}

// probs over [0, len) from f32 scores s (exact inputs), m = max s: the exponent s_p - m is
// rounded once (2u |x_p|, moving e_p by a factor exp(2u |x_p|)) and exp adds (3 + 2|x^_p|) ULP,
// so e^_p = e_p (1 + eps_p), eps_p = expm1(2u|x_p|)(1 + r_p) + r_p, r_p = (6 + 4|x_p|(1 + 2u))u.
// The sum S^ of len terms in any order: within gamma_len(2u) of sum e^_p = S (1 + sum P_p eps_p),
// |sum P_p eps_p| <= ebar. 1/S^ (division, 5u) and e^ * inv (2u). Hence P^_p / P_p lies in
//   [(1 - eps_p)(1 - 5u)(1 - 2u) / ((1 + ebar)(1 + gamma)), (1 + eps_p)(1 + 5u)(1 + 2u) / ((1 - ebar)(1 - gamma))]
// and the upper end minus 1 bounds both sides (each lower factor is >= 1 - its upper excess).
// Underflow: an e_p below 2^-126 may be flushed to 0 (2^-126 / S^ <= 2^-126 (1 + 7u) absolute,
// S^ >= exp(0) = 1 within 6u) and the flushed terms move S by at most len 2^-126: + 2 2^-126 +
// P_p len 2^-126. Masked positions: exactly 0 (bound 0).
void softmax_truth(const AttentionParams& p, const std::vector<float>& s, std::vector<double>& P,
                   std::vector<double>& bound) {
  const int64_t T = p.tokens, H = p.q_heads, L = p.past + T;
  P.assign(s.size(), 0.0), bound.assign(s.size(), 0.0);
  std::vector<double> eps(static_cast<size_t>(L));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t len = p.past + t + 1, base = (t * H + h) * L;
      double m = s[size_t(base)];
      for (int64_t i = 1; i < len; ++i) m = std::max(m, double(s[size_t(base + i)]));
      double sum = 0;
      for (int64_t i = 0; i < len; ++i) sum += (P[size_t(base + i)] = std::exp(double(s[size_t(base + i)]) - m));
      double ebar = 0;
      for (int64_t i = 0; i < len; ++i) {
        const double x = std::fabs(double(s[size_t(base + i)]) - m), r = exp_rel(x * (1 + kU2));
        eps[size_t(i)] = std::expm1(kU2 * x) * (1 + r) + r;
        P[size_t(base + i)] /= sum;
        ebar += P[size_t(base + i)] * eps[size_t(i)];
      }
      const double gam = sum_gamma(double(len), kU2);
      for (int64_t i = 0; i < len; ++i) {
        const double hi = (1 + eps[size_t(i)]) * (1 + division_rel()) * (1 + kU2) / ((1 - ebar) * (1 - gam));
        const double Pi = P[size_t(base + i)];
        bound[size_t(base + i)] = Pi * (hi - 1) + 2 * kMinNormal32 + Pi * double(len) * kMinNormal32;
      }
    }
}

// attn[t][h*D + d] = sum_{p < len} P_p V_pd from f32 probs: len products and sums in any order,
// gamma_len(2u) sum_p |P_p V_pd|, plus 2^-126 per product flushed from the subnormal range.
void values_truth(const AttentionParams& p, const std::vector<float>& P, const std::vector<float>& vc,
                  std::vector<double>& attn, std::vector<double>& bound) {
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
      const double gam = sum_gamma(double(len), kU2);
      for (int64_t d = 0; d < D; ++d)
        bound[size_t((t * H + h) * D + d)] = gam * abs[size_t(d)] + double(len) * kMinNormal32;
    }
}

// The gate's relative error on o = attn * sig(g) (attn exact, an f32 input): exp(-g) within
// (6 + 4|g|)u, which 1 + E passes on scaled by E / (1 + E) <= 1, plus its own rounding 2u; the
// division 5u; the product 2u. In ULP of the exact result (one ULP of y is more than u|y|):
// at most rel / u ULP.
double gate_rel(double g) { return (1 + exp_rel(g)) * (1 + kU2) * (1 + division_rel()) * (1 + kU2) - 1; }

// ---- The whole op's bound on o, for a chain of conforming stage kernels or a fused kernel
// computing the same formulas in f32 (kernels_cpu/check/attention_check.cpp's derivation with
// the Vulkan rules in place of IEEE round-to-nearest). Per (t, h), len rows, exact scores s_p,
// weights P_p, A_p = scale sum_d |q_d K_pd|, A = max_p A_p:
//  * score error (the scores bound above): Ds = scale gamma_D(2u) A (1 + 2u) + 2u A + D 2^-126
//    scale; the subtraction s^_p - m^ (m^ any computed score) rounds by 2u (2A + 2Ds). The
//    softmax does not depend on the common shift m^, so each exponent is off by at most
//    Dx = Ds + 4u (A + Ds), and the softmax of such exponents is within exp(+-2 Dx) of P.
//  * exp: eps_p = (6 + 4 |x^_p|)u, |x^_p| <= s_max - s_p + 2 Dx; the normaliser (any order,
//    gamma_len(2u)), the division 5u, the multiply 2u: computed weights P_p (1 + eta_p),
//    |eta_p| <= rho + (1 + rho) eps_p, rho = exp(2Dx)(1 + 5u)(1 + 2u) / ((1 - ebar)(1 - gamma)) - 1
//    with ebar = exp(2Dx) sum_p P_p eps_p (the weighted exp error of the normaliser).
//  * values: len products summed in any order, gamma_len(2u) sum |P^_p V_pd|:
//    err_a = (1 + gamma)(rho W_d + (1 + rho) E_d) + gamma W_d, W_d = sum_p P_p |V_pd|,
//    E_d = sum_p P_p eps_p |V_pd| (an intermediate stored in f32 by a chain is exact in f32: a
//    stage's output is its next stage's input, no extra rounding).
//  * gate: o^ = a^ sig^ (1 + gate_rel): sig (1 + gr) err_a + gr sig W_d, |a| <= W_d.
//  * underflow: exp results and products below 2^-126 flushed: 2^-125 (1 + sum_p |V_pd|) +
//    len 2^-126; the truth's own rounding to f32 (attention_ref<double> writes floats): u |o|.
std::vector<double> o_bound(const AttentionParams& p, const std::vector<float>& q, const std::vector<float>& gate,
                            const std::vector<float>& kc, const std::vector<float>& vc,
                            const std::vector<float>& o) {
  const int64_t T = p.tokens, H = p.q_heads, Hkv = p.kv_heads, D = p.head_dim, G = H / Hkv, row = Hkv * D;
  const double scale = p.scale, gD = sum_gamma(double(D), kU2);
  using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  std::vector<double> bound(size_t(T * H * D));
  const int64_t rows = p.past + T;
  for (int64_t g = 0; g < Hkv; ++g) {
    Mat K(rows, D), V(rows, D);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t d = 0; d < D; ++d) K(r, d) = kc[size_t(r * row + g * D + d)], V(r, d) = vc[size_t(r * row + g * D + d)];
    const Mat Kabs = K.cwiseAbs(), Vabs = V.cwiseAbs();
    for (int64_t t = 0; t < T; ++t) {
      const int64_t len = p.past + t + 1;
      const double gam = sum_gamma(double(len), kU2);
      Eigen::MatrixXd Q(D, G);
      for (int64_t j = 0; j < G; ++j)
        for (int64_t d = 0; d < D; ++d) Q(d, j) = q[size_t((t * H + g * G + j) * D + d)];
      const Eigen::MatrixXd S = (K.topRows(len) * Q) * scale;
      const Eigen::MatrixXd A = (Kabs.topRows(len) * Q.cwiseAbs()) * scale;
      const Eigen::VectorXd V1 = Vabs.topRows(len).colwise().sum().transpose();
      for (int64_t j = 0; j < G; ++j) {
        const double Amax = A.col(j).maxCoeff(), smax = S.col(j).maxCoeff();
        const double Ds = gD * Amax * (1 + kU2) + kU2 * Amax + double(D) * kMinNormal32 * scale;
        const double Dx = Ds + 4 * kU32 * (Amax + Ds);
        Eigen::VectorXd P = (S.col(j).array() - smax).exp().matrix();
        P /= P.sum();
        Eigen::VectorXd eps(len);
        for (int64_t i = 0; i < len; ++i) eps(i) = exp_rel(smax - S(i, j) + 2 * Dx);
        const Eigen::VectorXd Pe = P.cwiseProduct(eps);
        const double ebar = std::exp(2 * Dx) * Pe.sum();
        const double rho = std::exp(2 * Dx) * (1 + division_rel()) * (1 + kU2) / ((1 - ebar) * (1 - gam)) - 1;
        const Eigen::VectorXd W = Vabs.topRows(len).transpose() * P, E = Vabs.topRows(len).transpose() * Pe;
        const int64_t base = (t * H + g * G + j) * D;
        for (int64_t d = 0; d < D; ++d) {
          const double gv = gate[size_t(base + d)], sig = sigmoid(gv), gr = gate_rel(gv);
          const double err_a = (1 + gam) * (rho * W(d) + (1 + rho) * E(d)) + gam * W(d);
          bound[size_t(base + d)] = sig * (1 + gr) * err_a + gr * sig * W(d) + 2 * kMinNormal32 * (1 + V1(d)) +
                                    double(len) * kMinNormal32 + kU32 * std::fabs(double(o[size_t(base + d)]));
        }
      }
    }
  }
  return bound;
}

void set_reduction(OpCase& c, const std::string& name, std::vector<double> truth, std::vector<double> bound) {
  OutputSpec s;
  s.name = name, s.kind = Kind::Reduction, s.bound = std::move(bound);
  c.outputs[name] = s;
  c.truth[name] = std::move(truth);
}

// Floating-point operations of one call (2 per multiply-add in scores and values), for --perf.
double attention_flops(const AttentionParams& p) {
  double f = 0;
  for (int64_t t = 0; t < p.tokens; ++t) f += 4.0 * double(p.q_heads * p.head_dim) * double(p.past + t + 1);
  return f;
}

// ---- Stage cases: one shape, one stage.

OpCase stage_case(const std::string& op, const Shape& sh, uint64_t seed) {
  const AttentionParams p = params_of(sh);
  OpCase c = new_case(op, sh.label, seed);
  set_vars(c, p);
  const Inputs in = make_inputs(p, seed);
  std::vector<float> kc, vc;
  append(p, in, kc, vc);
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
  scores_truth(p, in.q, kc, s, sb);
  if (op == "attention_scores") {
    c.tensors["q"] = f32_tensor(in.q), c.tensors["k_cache"] = f32_tensor(kc);
    c.tensors["scores"] = output_f32(n_s);
    set_reduction(c, "scores", s, sb);
    c.flops = 2.0 * double(n_s) * double(p.head_dim);
    return c;
  }
  const std::vector<float> s32 = to_f32(s);
  softmax_truth(p, s32, P, pb);
  if (op == "attention_softmax") {
    c.tensors["scores"] = f32_tensor(s32), c.tensors["probs"] = output_f32(n_s);
    set_reduction(c, "probs", P, pb);
    return c;
  }
  const std::vector<float> P32 = to_f32(P);
  values_truth(p, P32, vc, a, ab);
  if (op == "attention_values") {
    c.tensors["probs"] = f32_tensor(P32), c.tensors["v_cache"] = f32_tensor(vc);
    c.tensors["attn"] = output_f32(n_o);
    set_reduction(c, "attn", a, ab);
    c.flops = attention_flops(p) / 2;
    return c;
  }
  MOE_CHECK(op == "attention_gate", "attention cases: no stage '" << op << "'");
  const std::vector<float> a32 = to_f32(a);
  std::vector<double> o(a32.size());
  OutputSpec spec;
  spec.name = "o", spec.kind = Kind::Elementwise;
  for (size_t i = 0; i < o.size(); ++i) {
    o[i] = double(a32[i]) * sigmoid(double(in.gate[i]));
    spec.ulp_budget.push_back(gate_rel(in.gate[i]) / kU32);
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

// Prefill (or one decode token): T tokens in one call, causal.
OpCase prefill_case(const Shape& sh, uint64_t seed) {
  const AttentionParams p = params_of(sh);
  const Inputs in = make_inputs(p, seed);
  return attention_instance(sh.label, seed, p, in.q, in.gate, in.k, in.v, in.k_cache, in.v_cache);
}

std::vector<float> slice(const std::vector<float>& x, int64_t i, int64_t n) {
  return std::vector<float>(x.begin() + i * n, x.begin() + (i + 1) * n);
}

// Multi-step cases of the whole op ("attention") or of its stateful stage ("kv_append"):
// `steps` consecutive calls of sh.T tokens each (T = 1: decode, one token per dispatch; T > 1:
// a prefill in chunks) on caches that stay on the device, uploaded once with sh.past earlier
// rows. Step s uploads its tokens' k, v (and q, gate), runs with past = sh.past + s T and
// decides both whole caches (the rows appended so far, the junk after them; a row appended by an
// earlier step and lost or moved fails here) and, for the whole op, o.
OpCase steps_case(const std::string& op, const Shape& sh, int64_t steps, uint64_t seed) {
  Shape all = sh;
  all.T = steps * sh.T;
  const AttentionParams pa = params_of(all);  // capacity past0 + steps T + 2; inputs for every step
  const Inputs in = make_inputs(pa, seed);
  const bool whole = op == "attention";
  MOE_CHECK(whole || op == "kv_append", "attention cases: no multi-step cases for '" << op << "'");
  AttentionParams p = pa;
  p.tokens = sh.T;
  OpCase c = new_case(op, sh.label, seed);
  set_vars(c, p);
  c.params += " steps=" + std::to_string(steps);
  const int64_t HD = p.tokens * p.q_heads * p.head_dim, row = p.tokens * p.kv_heads * p.head_dim;
  c.tensors["k"] = f32_tensor(slice(in.k, 0, row)), c.tensors["v"] = f32_tensor(slice(in.v, 0, row));
  c.tensors["k_cache"] = f32_tensor(in.k_cache), c.tensors["v_cache"] = f32_tensor(in.v_cache);
  if (whole) {
    c.tensors["q"] = f32_tensor(slice(in.q, 0, HD)), c.tensors["gate"] = f32_tensor(slice(in.gate, 0, HD));
    c.tensors["o"] = output_f32(HD);
    add_chain_scratch(c, p, pa.past + steps * sh.T);
  }
  std::vector<float> kc = in.k_cache, vc = in.v_cache;  // the host's mirror of the device caches
  for (int64_t s = 0; s < steps; ++s) {
    p.past = pa.past + s * sh.T;
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
      OutputSpec so;
      so.name = "o", so.kind = Kind::Reduction, so.bound = o_bound(p, q, g, kc, vc, o);
      st.outputs["o"] = so;
      st.truth["o"] = widen(o);
      c.flops += attention_flops(p);
    }
    OutputSpec ex;
    ex.kind = Kind::Exact;
    ex.name = "k_cache", st.outputs["k_cache"] = ex, st.truth["k_cache"] = widen(kc);
    ex.name = "v_cache", st.outputs["v_cache"] = ex, st.truth["v_cache"] = widen(vc);
    c.steps.push_back(std::move(st));
  }
  return c;
}

OpCase decode_case(const Shape& sh, int64_t steps, uint64_t seed) { return steps_case("attention", sh, steps, seed); }

// Shapes. Remainders: head_dim 1, 31, 33, 64, 67 around the kernels' 32/64/256 blocks, GQA
// groups of 1 to 4, kv lengths crossing 8/32/64/256 and prefills of 3 to 64 tokens (the causal
// edge inside a block), one case with large scores (scale 4: scores in the hundreds, where exp
// without the max subtraction overflows). Real: head_dim 256, A17B 32 q / 2 kv heads, A3B
// 16 / 2, contexts 0, 1, 100 and 4095.
std::vector<Shape> remainder_shapes() {
  return {{"T 1 past 0 G2 D64", 4, 2, 64, 0, 1},         {"T 1 past 32 G3 D33", 3, 1, 33, 32, 1},
          {"T 3 past 30 G1 D31", 2, 2, 31, 30, 3},       {"T 64 past 0 G4 D67", 8, 2, 67, 0, 64},
          {"T 33 past 257 G3 D1", 3, 1, 1, 257, 33},     {"T 5 past 300 G2 D64 large scores", 4, 2, 64, 300, 5, 4.0f}};
}
// Past the limits engines size for: head_dim 512 and 520 (shared q/k rows of 256), 130 q heads
// (more than 64 or 128), and a kv length past 8192 (the VK FA_MAX_SEQ_LEN and Metal's GPU KV
// capacity; a score row cached in shared memory). Cheap: few heads or a short head.
std::vector<Shape> limit_shapes() {
  return {{"T 1 past 40 G2 D512", 4, 2, 512, 40, 1},
          {"T 3 past 5 G1 D520", 2, 2, 520, 5, 3},
          {"T 1 past 20 H130 G65 D64", 130, 2, 64, 20, 1},
          {"T 1 past 8200 G2 D64", 4, 2, 64, 8200, 1}};
}
std::vector<Shape> real_stage_shapes() {
  return {{"A17B decode past 4095", 32, 2, 256, 4095, 1},
          {"A3B decode past 1", 16, 2, 256, 1, 1},
          {"A17B prefill 64 past 0", 32, 2, 256, 0, 64},
          {"A3B prefill 16 past 100", 16, 2, 256, 100, 16}};
}

std::vector<OpCase> stage_cases(const std::string& op, bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  uint64_t k = 0;
  if (rem)
    for (const Shape& sh : remainder_shapes()) out.push_back(stage_case(op, sh, seed + 31 * ++k));
  if (real)
    for (const Shape& sh : real_stage_shapes()) out.push_back(stage_case(op, sh, seed + 31 * ++k));
  if (rem)
    for (const Shape& sh : limit_shapes()) out.push_back(stage_case(op, sh, seed + 31 * ++k));
  return out;
}

// Softmax is shift-invariant, so a max that misses a score or takes one too many goes unseen
// while all scores lie within ~88 of each other (exp neither overflows nor underflows). Here each
// row's largest score stands 100 above the rest, at a position p with p % 256 == 255 (the last
// subgroup of any workgroup of 64, 128 or 256 lanes), and the causally masked entries of the
// score rows (p >= len: never part of a row's softmax) hold 1000: a max that drops the last
// subgroup's partial overflows exp, one that reads past the row's length underflows every exp.
OpCase softmax_spread_case(uint64_t seed) {
  const Shape sh{"T 3 past 300 G2 D64 max 100 above the rest", 4, 2, 64, 300, 3};
  const AttentionParams p = params_of(sh);
  OpCase c = new_case("attention_softmax", sh.label, seed);
  set_vars(c, p);
  const Inputs in = make_inputs(p, seed);
  std::vector<float> kc, vc;
  append(p, in, kc, vc);
  std::vector<double> s, sb, P, pb;
  scores_truth(p, in.q, kc, s, sb);
  std::vector<float> s32 = to_f32(s);
  const int64_t L = p.past + p.tokens;
  for (int64_t t = 0; t < p.tokens; ++t)
    for (int64_t h = 0; h < p.q_heads; ++h) {
      const int64_t len = p.past + t + 1, base = (t * p.q_heads + h) * L;
      float m = s32[size_t(base)];
      for (int64_t i = 1; i < len; ++i) m = std::max(m, s32[size_t(base + i)]);
      s32[size_t(base + 255)] = m + 100.0f;
      for (int64_t i = len; i < L; ++i) s32[size_t(base + i)] = 1000.0f;
    }
  softmax_truth(p, s32, P, pb);
  c.tensors["scores"] = f32_tensor(s32), c.tensors["probs"] = output_f32(int64_t(s32.size()));
  set_reduction(c, "probs", P, pb);
  return c;
}

// Appends kept on the device over several calls: one token per call (decode) and chunks.
std::vector<OpCase> kv_append_steps_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  uint64_t k = 100;
  if (rem) {
    out.push_back(steps_case("kv_append", {"decode 16 steps from past 0 G2 D33", 4, 2, 33, 0, 1}, 16, seed + 31 * ++k));
    out.push_back(steps_case("kv_append", {"prefill 3 chunks of 5 from past 2 G3 D67", 3, 1, 67, 2, 5}, 3, seed + 31 * ++k));
  }
  if (real) {
    out.push_back(steps_case("kv_append", {"A17B decode T 1, 16 steps from past 1", 32, 2, 256, 1, 1}, 16, seed + 31 * ++k));
    out.push_back(steps_case("kv_append", {"A3B decode T 1, 16 steps from past 100", 16, 2, 256, 100, 1}, 16, seed + 31 * ++k));
    out.push_back(steps_case("kv_append", {"A17B prefill 2 chunks of 8 from past 0", 32, 2, 256, 0, 8}, 2, seed + 31 * ++k));
    out.push_back(steps_case("kv_append", {"A3B prefill 2 chunks of 16 from past 100", 16, 2, 256, 100, 16}, 2, seed + 31 * ++k));
  }
  return out;
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
  Inputs in;
  in.q.assign(q.begin(), q.end()), in.gate.assign(gate.begin(), gate.end());
  in.k.assign(k.begin(), k.end()), in.v.assign(v.begin(), v.end());
  in.k_cache.assign(k_cache.begin(), k_cache.end()), in.v_cache.assign(v_cache.begin(), v_cache.end());
  std::vector<float> kc = in.k_cache, vc = in.v_cache, o(in.q.size());
  attention_ref<double>(p, in.q, in.gate, in.k, in.v, kc, vc, o);
  c.tensors["q"] = f32_tensor(in.q), c.tensors["gate"] = f32_tensor(in.gate);
  c.tensors["k"] = f32_tensor(in.k), c.tensors["v"] = f32_tensor(in.v);
  c.tensors["k_cache"] = f32_tensor(in.k_cache), c.tensors["v_cache"] = f32_tensor(in.v_cache);
  c.tensors["o"] = output_f32(int64_t(o.size()));
  add_chain_scratch(c, p, p.past + p.tokens);
  set_reduction(c, "o", widen(o), o_bound(p, in.q, in.gate, kc, vc, o));
  set_exact_output(c, "k_cache", kc), set_exact_output(c, "v_cache", vc);
  c.flops = attention_flops(p);
  return c;
}

std::vector<OpCase> kv_append_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out = stage_cases("kv_append", rem, real, seed);
  for (OpCase& c : kv_append_steps_cases(rem, real, seed)) out.push_back(std::move(c));
  return out;
}
std::vector<OpCase> attention_scores_cases(bool rem, bool real, uint64_t seed) {
  return stage_cases("attention_scores", rem, real, seed);
}
std::vector<OpCase> attention_softmax_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out = stage_cases("attention_softmax", rem, real, seed);
  if (rem) out.push_back(softmax_spread_case(seed + 977));
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
  uint64_t k = 0;
  if (rem) {
    for (const Shape& sh : remainder_shapes()) out.push_back(prefill_case(sh, seed + 31 * ++k));
    out.push_back(decode_case({"decode 16 steps from past 0 G2 D33", 4, 2, 33, 0, 1}, 16, seed + 31 * ++k));
    out.push_back(decode_case({"decode 20 steps from past 30 G3 D67", 3, 1, 67, 30, 1}, 20, seed + 31 * ++k));
  }
  if (real) {
    out.push_back(prefill_case({"A17B prefill 64 past 0", 32, 2, 256, 0, 64}, seed + 31 * ++k));
    out.push_back(prefill_case({"A3B prefill 16 past 100", 16, 2, 256, 100, 16}, seed + 31 * ++k));
    out.push_back(prefill_case({"A17B decode past 4095", 32, 2, 256, 4095, 1}, seed + 31 * ++k));
    out.push_back(decode_case({"A17B decode 16 steps from past 1", 32, 2, 256, 1, 1}, 16, seed + 31 * ++k));
    // The 4095 context once per seed as a single step above: 16 steps of it cost lavapipe ~10 s.
    out.push_back(decode_case({"A3B decode 16 steps from past 100", 16, 2, 256, 100, 1}, 16, seed + 31 * ++k));
    // A prefill in chunks: T > 1 per dispatch on caches carried over from the previous chunk.
    out.push_back(decode_case({"A17B prefill 2 chunks of 8 from past 0", 32, 2, 256, 0, 8}, 2, seed + 31 * ++k));
    out.push_back(decode_case({"A3B prefill 2 chunks of 16 from past 100", 16, 2, 256, 100, 16}, 2, seed + 31 * ++k));
  }
  if (rem) {
    for (const Shape& sh : limit_shapes()) out.push_back(prefill_case(sh, seed + 31 * ++k));
    out.push_back(decode_case({"prefill 3 chunks of 5 from past 2 G3 D67", 3, 1, 67, 2, 5}, 3, seed + 31 * ++k));
  }
  return out;
}

}  // namespace moe::compare
