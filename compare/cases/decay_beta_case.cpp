#include <cmath>
#include <string>

#include "compare/cases/case_util.h"
#include "compare/cases/instances.h"
#include "compare/decide/precision.h"
#include "core/rng.h"
#include "ops/decay_beta.h"

namespace moe::compare {
namespace {

// ---- decay_beta: a ~ N(0, 2^2) or U(a1, a2) (in_proj_a outputs; the edge cases push
// u = a + dt_bias into both softplus saturations), b ~ N(0, b_sd^2), A = exp(A_log) ~ U(A_lo,
// A_hi) (HF init A ~ U(0, 16); [1, 16] as in the checkpoints), dt_bias the inverse softplus of
// dt ~ logU(1e-3, 0.1) (HF init) rounded to bf16, as the op's self-check draws them.
struct Inputs {
  double a1, a2;
  bool uniform;
  double A_lo, A_hi;
  double b_sd;
};

// Both outputs are elementwise chains of transcendentals: Kind::Elementwise, the budget of each
// element = its absolute error bound / ulp(truth). Bounds first order in u = 2^-24 under the
// Vulkan precision rules (exp, exp2: 3 + 2|x| ULP; log: 3 ULP, or 2^-21 absolute for arguments
// in [0.5, 2]; division 2.5 ULP; +, *: correctly rounded, i.e. < 1 ULP); one ULP <= 2u relative.
// (The code takes exp, log and division from decide/precision.h: the rules or the device's
// calibrated budgets.)
// With ud = a + dt_bias (exact in f64), sp = softplus(ud), s = sigmoid(ud), A = exp(A_log),
// P = A sp, g = exp(-P), all from f64:
//   u = fl(a + dt_bias): u |ud|, which moves sp by s u |ud|.
//   softplus, either form a kernel may use:
//     engines' log(1 + exp(u)): exp's (6 + 4|u|)u relative reaches the log damped by
//       E / (1 + E) = s; 1 + E rounds (u); the log: 2^-21 absolute (1 + E in [1, 2], u <= 0)
//       or 3 ULP = 6u sp (u > 0);
//     stable max(u, 0) + log(1 + exp(-|u|)): exp's error damped by e^-|u| / (1 + e^-|u|) <= s;
//       1 + E (u); log on [1, 2]: 2^-21 absolute; the final add u sp.
//     Both: dsp <= s (|ud| + 6 + 4|ud|)u + u + 2^-21 + 6u sp.
//   P = exp(A_log) * sp: exp (6 + 4|A_log|)u relative, the product u:
//     dP <= (7 + 4|A_log|)u P + A dsp.
//   g = exp(-P): the argument's error moves g by g dP, exp's own (6 + 4P)u g; the truth's
//     rounding to f32 u g; the smallest normal for g flushed or subnormal (P > 87.3):
//     dg <= g (dP + (7 + 4P)u) + 2^-126.
//   Where fl(a + dt_bias) >= 88 the engines' exp(u) overflows (past 88.72) and their g is
//     exp(-inf) = 0 whatever A is: docs/ops/verification.md "Edge cases" defines that, so there g_true is added to
//     the allowance (0 passes; the stable form is accurate there and passes anyway). With
//     realistic A >= 1 the truth is < e^-88 and nothing changes; the overflow case uses tiny A.
//   beta = 1 / (1 + exp(-b)): exp (6 + 4|b|)u damped by E / (1 + E) = 1 - beta, 1 + E (u), the
//     division 5u, the truth's rounding u: dbeta <= beta ((6 + 4|b|)(1 - beta) + 7)u + 2^-126
//     (for b < -87.3, 1 + E >= 2^126 leaves the range where Vulkan defines division, and E
//     overflows past -88.7: a kernel may return 0 there, and beta_true <= 2^-126).
OpCase decay_beta_case(const std::string& label, int64_t T, int64_t H, const Inputs& in, uint64_t seed) {
  DecayBetaParams p;
  p.tokens = T, p.heads = H;
  Rng rng(seed);
  const int64_t n = T * H;
  std::vector<float> a(static_cast<size_t>(n)), A_log(static_cast<size_t>(H));
  const std::vector<float> b = rng.fork(2).normal_vec(n, in.b_sd);
  std::vector<bf16> dtb(static_cast<size_t>(H));
  std::vector<float> dt_bias(static_cast<size_t>(H));
  {
    Rng ra = rng.fork(1);
    for (float& v : a) v = in.uniform ? ra.uniform(float(in.a1), float(in.a2)) : float(in.a1 + in.a2 * ra.normal());
    Rng rh = rng.fork(3);
    for (int64_t h = 0; h < H; ++h) {
      A_log[size_t(h)] = float(std::log(in.A_lo + (in.A_hi - in.A_lo) * rh.uniform01()));
      const double dt = std::exp(std::log(1e-3) + rh.uniform01() * std::log(100.0));
      dtb[size_t(h)] = f32_to_bf16_rne(float(dt + std::log(-std::expm1(-dt))));
      dt_bias[size_t(h)] = bf16_to_f32(dtb[size_t(h)]);
    }
  }
  return decay_beta_instance(label, seed, p, a, b, A_log, dtb);
}

}  // namespace

OpCase decay_beta_instance(const std::string& label, uint64_t seed, const DecayBetaParams& p, std::span<const float> a,
                           std::span<const float> b, std::span<const float> A_log, std::span<const bf16> dtb) {
  OpCase c = new_case("decay_beta", label, seed);
  set_vars(c, p);
  const int64_t n = p.tokens * p.heads, H = p.heads;
  std::vector<float> dt_bias(dtb.size());
  for (size_t i = 0; i < dtb.size(); ++i) dt_bias[i] = bf16_to_f32(dtb[i]);
  std::vector<float> g(static_cast<size_t>(n)), beta(static_cast<size_t>(n));
  decay_beta_ref<double>(p, a, b, A_log, dt_bias, g, beta);
  c.tensors["a"] = f32_tensor(a);
  c.tensors["b"] = f32_tensor(b);
  c.tensors["A_log"] = f32_tensor(A_log);
  c.tensors["dt_bias"] = bf16_tensor(dtb);
  c.tensors["g"] = output_f32(n);
  c.tensors["beta"] = output_f32(n);
  OutputSpec sg, sb;
  sg.name = "g", sb.name = "beta";
  sg.kind = sb.kind = Kind::Elementwise;
  const double u = kU32;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t h = i % H;
    const double ud = double(a[size_t(i)]) + double(dt_bias[size_t(h)]);
    const double sp = ud > 0 ? ud + std::log1p(std::exp(-ud)) : std::log1p(std::exp(ud));
    const double s = 1.0 / (1.0 + std::exp(-ud));
    const double al = double(A_log[size_t(h)]), A = std::exp(al), P = A * sp;
    const double dsp = s * (std::fabs(ud) * u + exp_rel(ud)) + u + log_abs() + log_ulp_rel() * sp;
    const double dP = (exp_rel(al) + u) * P + A * dsp;
    const double gt = double(g[size_t(i)]);
    double dg = gt * (dP + exp_rel(P) + u) + kMinNormal32;
    if (a[size_t(i)] + dt_bias[size_t(h)] >= 88.0f) dg += gt;  // the engines' defined g = 0
    sg.ulp_budget.push_back(vk_ulp::from_abs(dg, gt));
    const double bt = double(beta[size_t(i)]), ab = std::fabs(double(b[size_t(i)]));
    const double db = bt * (exp_rel(ab) * (1 - bt) + 2 * u + division_rel()) + kMinNormal32;
    sb.ulp_budget.push_back(vk_ulp::from_abs(db, bt));
  }
  c.outputs["g"] = sg, c.outputs["beta"] = sb;
  c.truth["g"] = widen(g), c.truth["beta"] = widen(beta);
  c.flops = double(n * 12);
  return c;
}

std::vector<OpCase> decay_beta_cases(bool rem, bool real, uint64_t seed) {
  const Inputs realistic{0.0, 2.0, false, 1.0, 16.0, 2.0};
  std::vector<OpCase> out;
  if (rem) {
    // Heads around the 64-wide workgroups.
    for (int64_t H : {1, 31, 65})
      out.push_back(decay_beta_case("remainder heads " + std::to_string(H), 3, H, realistic, seed + uint64_t(H)));
    // More heads than the 64 or 128 a kernel may hard-wire, and than 512, one token (decode).
    for (int64_t H : {129, 513})
      out.push_back(decay_beta_case("remainder T 1 heads " + std::to_string(H), 1, H, realistic, seed + uint64_t(H)));
    // u in [-60, 80] with A down to 1e-4: both saturations, g from 1 down to 0 (and subnormal).
    out.push_back(decay_beta_case("wide a in [-60, 80]", 64, 64, {-60.0, 80.0, true, 1e-4, 16.0, 30.0}, seed + 1));
    // u < -16.6: the engines' softplus is 0 and g = 1, the truth 1 - A e^u.
    out.push_back(decay_beta_case("softplus underflow a in [-40, -12]", 32, 64, {-40.0, -12.0, true, 1.0, 16.0, 2.0},
                                  seed + 2));
    // u > 88.72: the engines' softplus is inf and g = 0; tiny A keeps the true g far from 0.
    out.push_back(decay_beta_case("softplus overflow a in [80, 200], tiny A", 32, 64,
                                  {80.0, 200.0, true, 1e-5, 0.02, 2.0}, seed + 3));
    // beta saturation: b far outside [-88.7, 88.7].
    out.push_back(decay_beta_case("b ~ N(0, 100^2)", 16, 64, {0.0, 2.0, false, 1.0, 16.0, 100.0}, seed + 4));
  }
  if (real) {
    out.push_back(decay_beta_case("A17B decode", 1, 64, realistic, seed + 10));
    out.push_back(decay_beta_case("A3B decode T 1", 1, 32, realistic, seed + 14));
    out.push_back(decay_beta_case("A17B 16 tokens", 16, 64, realistic, seed + 11));
    out.push_back(decay_beta_case("A3B 16 tokens", 16, 32, realistic, seed + 12));
    out.push_back(decay_beta_case("A3B prefill 64 tokens", 64, 32, realistic, seed + 13));
  }
  return out;
}

}  // namespace moe::compare
