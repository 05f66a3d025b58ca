#include <span>
#include <string>

#include "compare/cases/bound_mode.h"
#include "compare/cases/case_util.h"
#include "compare/cases/conventions.h"
#include "compare/cases/instances.h"
#include "ops/delta_net.h"
#include "spec/delta_net_spec.h"

namespace moe::compare {
namespace {

std::vector<float> slice(const std::vector<float>& v, int64_t off, int64_t n) {
  return std::vector<float>(v.begin() + off, v.begin() + off + n);
}

// Decode: one CaseStep per token (tokens = 1 per dispatch); the state stays on the device, and
// every step compares o and the whole state.
OpCase decode_case(const std::string& label, const DeltaNetParams& p, uint64_t seed, bool special_gates) {
  const DeltaNetInputs in = delta_net_inputs(p, seed, special_gates);
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
  DeltaNetErrorTracker tr(p);
  for (int64_t t = 0; t < T; ++t) {
    CaseStep st;
    st.label = "t=" + std::to_string(t);
    token_inputs(t, st.upload);
    std::vector<double> ob(static_cast<size_t>(Hv * dv));
    delta_net_token_step(p, in, t, R, tr, o.data(), ob.data(), device_model());
    set_reduction_output(st, "o", widen(o), std::move(ob));
    set_reduction_output(st, "state", widen(R), tr.b);
    c.steps.push_back(std::move(st));
  }
  c.flops = double(T * Hv * dv * dk * 7);
  return c;
}

}  // namespace

OpCase delta_net_instance(const std::string& label, uint64_t seed, const DeltaNetParams& p, std::span<const float> q,
                          std::span<const float> k, std::span<const float> v, std::span<const float> g,
                          std::span<const float> beta, std::span<const float> state0) {
  DeltaNetInputs in;
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
  DeltaNetErrorTracker tr(p);
  for (int64_t t = 0; t < T; ++t)
    delta_net_token_step(p, in, t, R, tr, o.data() + t * Hv * dv, ob.data() + t * Hv * dv, device_model());
  set_reduction_output(c, "o", widen(o), std::move(ob));
  set_reduction_output(c, "state", widen(R), tr.b);
  c.flops = double(T * Hv * dv * p.key_dim * 7);
  return c;
}

// The cases with a kernel's conventions set on every shape (compare/cases/conventions.h): the
// inputs (a log decay), the truth and the bounds follow them.
std::vector<OpCase> delta_net_conv_cases(bool rem, bool real, uint64_t seed, const Conventions& conv) {
  return build_cases(delta_net_shapes(rem, real), [&](const DeltaNetShape& s) -> std::optional<OpCase> {
    const uint64_t sd = seed + s.seed_offset;
    const DeltaNetParams p = with_conventions(s.p, conv);
    if (!s.variant.prefill) return decode_case(s.label, p, sd, s.variant.special_gates);
    const DeltaNetInputs in = delta_net_inputs(p, sd, s.variant.special_gates);
    return delta_net_instance(s.label, sd, p, in.q, in.k, in.v, in.g, in.beta, in.state0);
  });
}

std::vector<OpCase> delta_net_cases(bool rem, bool real, uint64_t seed) { return delta_net_conv_cases(rem, real, seed, {}); }

}  // namespace moe::compare
