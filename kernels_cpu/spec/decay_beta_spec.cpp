#include "spec/decay_beta_spec.h"

#include <cmath>
#include <string>

#include "core/rng.h"

namespace moe {

std::vector<DecayBetaShape> decay_beta_shapes(bool remainders, bool real) {
  std::vector<DecayBetaShape> out;
  auto add = [&](std::string label, int64_t T, int64_t H, uint64_t offset, DecayBetaDraw d) {
    out.push_back({std::move(label), DecayBetaParams{T, H}, offset, d});
  };
  auto only = [](DecayBetaDraw d, bool cpu) {
    d.cpu = cpu, d.gpu = !cpu;
    return d;
  };
  const DecayBetaDraw realistic{0.0, 2.0, false, 1.0, 16.0, 2.0};
  if (remainders) {
    for (int64_t H : {1, 31, 33, 65}) add("remainder heads " + std::to_string(H), 3, H, uint64_t(H), realistic);
    for (int64_t H : {129, 513}) add("remainder T 1 heads " + std::to_string(H), 1, H, uint64_t(H), realistic);
    add("wide a in [-60, 80]", 64, 64, 1, {-60.0, 80.0, true, 1e-4, 16.0, 30.0});
    add("softplus underflow a in [-40, -12]", 32, 64, 2, {-40.0, -12.0, true, 1.0, 16.0, 2.0});
    const DecayBetaDraw overflow{80.0, 200.0, true, 1e-5, 0.02, 2.0}, wide_b{0.0, 2.0, false, 1.0, 16.0, 100.0};
    add("softplus overflow a in [80, 200], tiny A", 32, 64, 3, only(overflow, false));
    add("softplus overflow a in [80, 200]", 32, 64, 3, only(overflow, true));
    add("b ~ N(0, 100^2)", 16, 64, 4, only(wide_b, false));
    add("b ~ N(0, 100)", 16, 64, 4, only(wide_b, true));
  }
  if (real) {
    add("A17B decode", 1, 64, 10, realistic);
    add("A3B decode T 1", 1, 32, 14, realistic);
    add("A17B 16 tokens", 16, 64, 11, realistic);
    add("A3B 16 tokens", 16, 32, 12, realistic);
    add("A3B prefill 64 tokens", 64, 32, 13, realistic);
  }
  return out;
}

DecayBetaInputs decay_beta_inputs(const DecayBetaParams& p, uint64_t seed, const DecayBetaDraw& d) {
  Rng rng(seed);
  DecayBetaInputs in;
  in.b = rng.fork(2).normal_vec(p.tokens * p.heads, d.b_sd);
  Rng ra = rng.fork(1);
  for (int64_t i = 0; i < p.tokens * p.heads; ++i)
    in.a.push_back(d.uniform ? ra.uniform(float(d.a1), float(d.a2)) : float(d.a1 + d.a2 * ra.normal()));
  Rng rh = rng.fork(3);
  for (int64_t h = 0; h < p.heads; ++h) {
    in.A_log.push_back(float(std::log(d.A_lo + (d.A_hi - d.A_lo) * rh.uniform01())));
    const double dt = std::exp(std::log(1e-3) + rh.uniform01() * std::log(100.0));
    in.dtb.push_back(f32_to_bf16_rne(float(dt + std::log(-std::expm1(-dt)))));
    in.dt_bias.push_back(bf16_to_f32(in.dtb.back()));
  }
  return in;
}

DecayBetaBounds decay_beta_bound(const DecayBetaParams& p, std::span<const float> a, std::span<const float> b,
                                 std::span<const float> A_log, std::span<const float> dt_bias,
                                 std::span<const float> g, std::span<const float> beta, const PrecisionModel& m) {
  const int64_t n = p.tokens * p.heads;
  const double u = m.u;
  DecayBetaBounds out{std::vector<double>(size_t(n)), std::vector<double>(size_t(n))};
  for (int64_t i = 0; i < n; ++i) {
    const size_t h = size_t(i % p.heads);
    const double ud = double(a[size_t(i)]) + double(dt_bias[h]);
    const double sp = ud > 0 ? ud + std::log1p(std::exp(-ud)) : std::log1p(std::exp(ud));
    const double s = 1.0 / (1.0 + std::exp(-ud));
    const double al = double(A_log[h]), A = std::exp(al), P = A * sp;
    const double dsp = s * (std::fabs(ud) * u + m.exp_rel(ud)) + u + m.log_abs + m.log_rel * sp;
    const double dP = (m.exp_rel(al) + u) * P + A * dsp;
    const double gt = double(g[size_t(i)]), bt = double(beta[size_t(i)]);
    out.g[size_t(i)] = gt * (dP + m.exp_rel(P) + u) + kMinNormal32;
    out.beta[size_t(i)] = bt * (m.exp_rel(std::fabs(double(b[size_t(i)]))) * (1 - bt) + 2 * u + m.division_rel) +
                          kMinNormal32;
  }
  return out;
}

}  // namespace moe
