#include <string>

#include "compare/cases/bound_mode.h"
#include "compare/cases/case_util.h"
#include "compare/cases/instances.h"
#include "ops/decay_beta.h"
#include "spec/decay_beta_spec.h"

namespace moe::compare {

// decay_beta's GPU cases: the shapes (those the GPU judges), inputs and bounds of
// spec/decay_beta_spec.h under the device's precision model. Both outputs are elementwise chains
// of transcendentals: Kind::Elementwise, each element's budget its absolute bound / ulp(truth).
OpCase decay_beta_instance(const std::string& label, uint64_t seed, const DecayBetaParams& p, std::span<const float> a,
                           std::span<const float> b, std::span<const float> A_log, std::span<const bf16> dtb) {
  OpCase c = new_case("decay_beta", label, seed);
  set_vars(c, p);
  const int64_t n = p.tokens * p.heads;
  std::vector<float> dt_bias, g(static_cast<size_t>(n)), beta(static_cast<size_t>(n));
  for (bf16 v : dtb) dt_bias.push_back(bf16_to_f32(v));
  decay_beta_ref<double>(p, a, b, A_log, dt_bias, g, beta);
  c.tensors["a"] = f32_tensor(a);
  c.tensors["b"] = f32_tensor(b);
  c.tensors["A_log"] = f32_tensor(A_log);
  c.tensors["dt_bias"] = bf16_tensor(dtb);
  c.tensors["g"] = output_f32(n);
  c.tensors["beta"] = output_f32(n);
  const DecayBetaBounds bd = decay_beta_bound(p, a, b, A_log, dt_bias, g, beta, device_model());
  OutputSpec sg, sb;
  sg.name = "g", sb.name = "beta";
  sg.kind = sb.kind = Kind::Elementwise;
  for (size_t i = 0; i < size_t(n); ++i) {
    // Where fl(a + dt_bias) >= 88 the engines' exp(u) overflows (past 88.72, a device's exp a
    // little earlier) and their g is 0 by definition (spec/decay_beta_spec.h): the truth's g is
    // added to the allowance there (0 passes; the stable form is accurate there and passes anyway).
    const bool overflows = a[i] + dt_bias[i % size_t(p.heads)] >= 88.0f;
    sg.ulp_budget.push_back(vk_ulp::from_abs(bd.g[i] + (overflows ? double(g[i]) : 0.0), g[i]));
    sb.ulp_budget.push_back(vk_ulp::from_abs(bd.beta[i], beta[i]));
  }
  c.outputs["g"] = sg, c.outputs["beta"] = sb;
  c.truth["g"] = widen(g), c.truth["beta"] = widen(beta);
  c.flops = double(n * 12);
  return c;
}

std::vector<OpCase> decay_beta_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  for (const DecayBetaShape& s : decay_beta_shapes(rem, real)) {
    if (!s.variant.gpu) continue;
    const DecayBetaInputs in = decay_beta_inputs(s.p, seed + s.seed_offset, s.variant);
    out.push_back(decay_beta_instance(s.label, seed + s.seed_offset, s.p, in.a, in.b, in.A_log, in.dtb));
  }
  return out;
}

}  // namespace moe::compare
