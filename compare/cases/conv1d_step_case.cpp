#include <string>

#include "compare/cases/bound_mode.h"
#include "compare/cases/case_util.h"
#include "compare/cases/instances.h"
#include "ops/conv1d_step.h"
#include "spec/conv1d_step_spec.h"

namespace moe::compare {
namespace {

// y against the spec's bound (spec/conv1d_step_spec.h) under the device's precision model; the
// state, raw inputs moved between slots and never computed, Exact (bit-equal, -0 != +0). The
// state is compared even when K = 1 (empty: nothing to compare then).
template <class Target>
void set_outputs(Target& c, const Conv1dStepParams& p, std::span<const float> x, std::span<const float> w,
                 std::span<const float> state0, const std::vector<float>& y, const std::vector<float>& state) {
  set_reduction_output(c, "y", widen(y), conv1d_step_bound(p, x, w, state0, y, device_model()));
  if (p.kernel > 1) set_exact_output(c, "state", state);
}

// Decode: one CaseStep per token (tokens = 1 per dispatch), the state kept on the device between
// steps (the kernel's own output carries over: a state not written back, or shifted wrongly,
// fails state@t=0 and every later y). Every step compares y and the whole state.
OpCase decode_case(const std::string& label, const Conv1dStepParams& p, uint64_t seed, const Conv1dStepInputs& in) {
  const int64_t C = p.channels;
  Conv1dStepParams p1 = p;
  p1.tokens = 1;
  OpCase c = new_case("conv1d_step", label, seed);
  set_vars(c, p1);
  c.params += " steps=" + std::to_string(p.tokens);
  c.tensors["x"] = f32_tensor(std::vector<float>(in.x.begin(), in.x.begin() + C));
  c.tensors["w"] = bf16_tensor(in.wb);
  c.tensors["state"] = f32_tensor(in.state0);
  c.tensors["y"] = output_f32(C);
  std::vector<float> state = in.state0, y(static_cast<size_t>(C));
  for (int64_t t = 0; t < p.tokens; ++t) {
    CaseStep st;
    st.label = "t=" + std::to_string(t);
    const std::vector<float> xt(in.x.begin() + t * C, in.x.begin() + (t + 1) * C), before = state;
    st.upload["x"] = f32_tensor(xt);
    conv1d_step_ref<double>(p1, xt, in.w, state, y);
    set_outputs(st, p1, xt, in.w, before, y, state);
    c.steps.push_back(std::move(st));
  }
  c.flops = double(p.tokens * C * (2 * p.kernel + 4));
  return c;
}

}  // namespace

// Prefill: one dispatch over T tokens; y of every token and the final state.
OpCase conv1d_step_instance(const std::string& label, uint64_t seed, const Conv1dStepParams& p,
                            std::span<const float> x, std::span<const bf16> wb, std::span<const float> state0) {
  std::vector<float> w;
  for (bf16 b : wb) w.push_back(bf16_to_f32(b));
  OpCase c = new_case("conv1d_step", label, seed);
  set_vars(c, p);
  c.tensors["x"] = f32_tensor(x);
  c.tensors["w"] = bf16_tensor(wb);
  c.tensors["state"] = f32_tensor(state0);
  c.tensors["y"] = output_f32(p.tokens * p.channels);
  std::vector<float> state(state0.begin(), state0.end()), y(x.size());
  conv1d_step_ref<double>(p, x, w, state, y);
  set_outputs(c, p, x, w, state0, y, state);
  c.flops = double(p.tokens * p.channels * (2 * p.kernel + 4));
  return c;
}

std::vector<OpCase> conv1d_step_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  for (const Conv1dStepShape& s : conv1d_step_shapes(rem, real)) {
    const Conv1dStepInputs in = conv1d_step_inputs(s.p, seed + s.seed_offset, s.variant);
    out.push_back(s.variant.decode ? decode_case(s.label, s.p, seed + s.seed_offset, in)
                                   : conv1d_step_instance(s.label, seed + s.seed_offset, s.p, in.x, in.wb, in.state0));
  }
  return out;
}

}  // namespace moe::compare
