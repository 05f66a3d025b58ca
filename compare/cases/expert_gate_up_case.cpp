#include <cmath>
#include <string>

#include "compare/cases/act_model.h"
#include "compare/cases/bound_mode.h"
#include "compare/cases/case_util.h"
#include "compare/decide/precision.h"
#include "core/expert_blob.h"
#include "ops/swiglu_expert.h"
#include "spec/swiglu_expert_spec.h"

namespace moe::compare {

// act = silu(g) * u of one token, exactly (f64), with three error bounds on it (per row i):
//   gpu    |act_gpu - h| for a Vulkan kernel accumulating in f32 in any order (below);
//   ref32  |h_ref - h| for swiglu_expert_ref<double>'s h (f64 sums rounded to f32 for g and u,
//          f64 silu and product, h rounded to f32 once more);
//   ref64  |h_f64 - h| for h computed all in f64 (the stage truth below).
// Derivation, first order in u = 2^-24 (u64 = 2^-53), d = hidden:
// 1. g = gate . x, u = up . x: any order, fma(q, s, b) * x or fma(q, s x, b x) terms (see
//    quant_rows): |dg| <= gamma_{d+1} mag_g, |du| <= gamma_{d+1} mag_u. ref32: u |g| + the f64
//    sum's gamma64_{d+1} mag_g; ref64: gamma64_{d+1} mag_g.
// 2. Propagation: silu is 1.1-Lipschitz (max |silu'| = 1.0998 at g = 2.4), so
//    |silu(g') u' - silu(g) u| <= 1.1 |dg| (|u| + |du|) + |silu(g)| |du| =: e1.
// 3. Evaluation of g / (1 + exp(-g)) * u on the GPU (Vulkan precision rules, or the device's
//    calibrated budgets: decide/precision.h; the figures below are the rules'): exp within
//    3 + 2|g'| ULP, one ULP <= 2u relative: (6 + 4|g'|) u on E = exp(-g'); 1 + E rounds (u) and
//    passes E's error on scaled by E / (1 + E) = 1 / (1 + exp(g')) (largest at g' = g - |dg|);
//    the division 2.5 ULP = 5u (a kernel forming g * (1 / (1 + E)) instead: 5u + u, budgeted:
//    6u); the product with u and the f32 store: u. rel = (6 + 4|g'|) u damp + 7u + u, times
//    (|h| + e1). ref32/ref64: f64 exp, add, division, product (4 u64), ref32 adds u for h's store.
// 4. exp(-g') overflows for g' < -88.7: the kernel's silu is -0 (E = +inf) or anything below
//    the division's range, while |silu(g)| < 1e-36 there: 1e-36 (|u| + |du|) absolute covers it.
ActModel act_model(const QuantMatrix& gate, const QuantMatrix& up, const double* x) {
  const int64_t I = gate.rows, d = gate.cols;
  const double u = kU32, u64 = 0x1.0p-53;
  const double gd = sum_gamma(double(d + 1)), gd64 = sum_gamma(double(d + 1), u64);
  const size_t n = static_cast<size_t>(I);
  std::vector<double> g(n), gm(n), uu(n), um(n);
  quant_rows(gate, x, g.data(), gm.data());
  quant_rows(up, x, uu.data(), um.data());
  ActModel m;
  m.h.resize(n), m.gpu.resize(n), m.ref32.resize(n), m.ref64.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const double s = g[i] / (1 + std::exp(-g[i]));
    const double h = s * uu[i];
    auto prop = [&](double dg, double du, double rel) {
      const double e1 = 1.1 * dg * (std::fabs(uu[i]) + du) + std::fabs(s) * du + 1e-36 * (std::fabs(uu[i]) + du);
      return e1 + rel * (std::fabs(h) + e1);
    };
    const double dg = gd * gm[i], du = gd * um[i];
    const double damp = 1 / (1 + std::exp(g[i] - dg));
    const double rel_gpu = exp_rel(std::fabs(g[i]) + dg) * damp + division_rel() + 3 * u;
    m.h[i] = h;
    m.gpu[i] = prop(dg, du, rel_gpu * (1 + rel_gpu));
    m.ref32[i] = prop(u * std::fabs(g[i]) + gd64 * gm[i], u * std::fabs(uu[i]) + gd64 * um[i], 4 * u64 + u);
    m.ref64[i] = prop(gd64 * gm[i], gd64 * um[i], 4 * u64);
  }
  return m;
}

ActModel act_model(const QuantMatrix& gate, const QuantMatrix& up, std::span<const float> x) {
  const std::vector<double> xd(x.begin(), x.end());
  return act_model(gate, up, xd.data());
}

double ActModel::act_bound(size_t i) const { return gpu[i] + ref64[i] + kMinNormal32; }

std::vector<double> ActModel::down_input_bound() const {
  const double n = double(h.size() + 1), gi = sum_gamma(n), gi64 = sum_gamma(n, 0x1.0p-53);
  std::vector<double> v(h.size());
  for (size_t i = 0; i < h.size(); ++i) {
    const double a = std::fabs(h[i]);
    v[i] = (1 + gi) * gpu[i] + ref32[i] + gi * a + gi64 * (a + ref32[i]);
  }
  return v;
}

// The stage's variables: swiglu_expert's (tokens, hidden, inter, bits) plus group_size, the
// names the swiglu_expert chain hands its stages (compare/manifest/chains.cpp).
void set_expert_vars(OpCase& c, const SwigluExpertParams& p) {
  set_vars(c, p);
  c.vars["group_size"] = kExpertGroupSize;
  c.params += " group_size=" + std::to_string(kExpertGroupSize);
}

void add_act_output(OpCase& c, std::span<const ActModel> rows, int64_t d) {
  OutputSpec s;
  s.name = "act", s.kind = Kind::Reduction;
  std::vector<double> truth;
  for (const ActModel& m : rows)
    for (size_t i = 0; i < m.h.size(); ++i) truth.push_back(m.h[i]), s.bound.push_back(m.act_bound(i));
  c.tensors["act"] = output_f32(int64_t(truth.size()));
  c.outputs["act"] = s;
  c.truth["act"] = truth;
  c.flops = 4.0 * double(truth.size()) * double(d);
}

// expert_gate_up's GPU cases, a stage of swiglu_expert: the shapes and inputs of
// spec/swiglu_expert_spec.h (expert_gate_up_shapes). Truth: act in f64 from the f64 products
// (act_model); bound: gpu + ref64 per element, plus the smallest normal (a flushed subnormal act).
std::vector<OpCase> expert_gate_up_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  for (const auto& sh : expert_gate_up_shapes(rem, real)) {
    const SwigluExpertParams& p = sh.p;
    const int64_t d = p.hidden;
    const ExpertGateUpInputs in = expert_gate_up_inputs(p, seed + sh.seed_offset, sh.variant);
    OpCase c = new_case("expert_gate_up", sh.label, seed + sh.seed_offset);
    set_expert_vars(c, p);
    add_quant_tensors(c, "gate", in.gate);
    add_quant_tensors(c, "up", in.up);
    c.tensors["x"] = f32_tensor(in.x);
    std::vector<ActModel> rows;
    for (int64_t t = 0; t < p.tokens; ++t)
      rows.push_back(act_model(in.gate.view(), in.up.view(), std::span(in.x).subspan(size_t(t * d), size_t(d))));
    add_act_output(c, rows, d);
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace moe::compare
