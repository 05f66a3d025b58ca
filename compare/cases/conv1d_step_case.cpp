#include <cmath>
#include <string>

#include "compare/cases/bound_mode.h"
#include "compare/cases/case_util.h"
#include "compare/decide/precision.h"
#include "compare/cases/instances.h"
#include "core/rng.h"
#include "ops/conv1d_step.h"

namespace moe::compare {
namespace {

// ---- conv1d_step: x the raw in_proj_qkv outputs (activations: N(0, 1) with x20 outlier
// channels; x_scale > 1 pushes acc into silu's exp-overflow region), w the checkpoint's bf16
// taps N(0, 0.3^2), state the raw inputs of earlier tokens (mid-sequence) or zero (start).
//
// y: bound in f32 accumulation, any order, fused or not, first order in u = 2^-24 (one ULP of
// a value is at most 2u of it; Vulkan precision rules, or the device's calibrated budgets: decide/precision.h):
//   acc is a sum of K products: |dacc| <= gamma_K * sum |terms| (the truth's f64 sum of exact
//     f32 products is exact to 2^-53, negligible). silu' is bounded by 1.0999 < 1.1, so y moves
//     by at most 1.1 |dacc|.
//   silu(a) = a / (1 + E), E = exp(-a): exp within 3 + 2|a| ULP = (6 + 4|a|)u relative, which
//     reaches y damped by E / (1 + E) = 1 - sigmoid(a); 1 + E rounds once (u), the division
//     2.5 ULP (5u), the truth's rounding to f32 (u): ((6 + 4|a|)(1 - sigmoid(a)) + 7)u |y|.
//     |a| is the kernel's acc, at most |acc_true| + dacc.
//   Floor 2^-119 = 1.5e-36: for acc < -87.3, 1 + E >= 2^126 is outside the range where Vulkan
//     defines division (and past -88.72 E overflows to inf): a kernel may return -0 or a flushed
//     value there; the truth is |a| e^a <= 87.3 e^-87.3 < 1.1e-36. It also covers subnormals.
// state: the raw inputs moved between slots, never computed: Exact (bit-equal, -0 != +0).
constexpr double kSiluFloor = 0x1.0p-119;

struct Conv {
  Conv1dStepParams p;
  std::vector<float> w;  // widened bf16 taps
};

// The bound for one token's outputs given the truth's state before it.
std::vector<double> y_bound(const Conv& cv, const float* x, const std::vector<float>& state,
                            const std::vector<float>& y_true) {
  const int64_t C = cv.p.channels, K = cv.p.kernel;
  const double gk = sum_gamma(double(K));
  std::vector<double> b(static_cast<size_t>(C));
  for (int64_t c = 0; c < C; ++c) {
    double sum_abs = std::fabs(double(x[c]) * double(cv.w[size_t(c * K + K - 1)]));
    double acc = double(x[c]) * double(cv.w[size_t(c * K + K - 1)]);
    for (int64_t j = 0; j + 1 < K; ++j) {
      const double t = double(state[size_t(j * C + c)]) * double(cv.w[size_t(c * K + j)]);
      sum_abs += std::fabs(t), acc += t;
    }
    const double dacc = gk * sum_abs;
    const double a = std::fabs(acc) + dacc;
    const double one_minus_sig = 1.0 / (1.0 + std::exp(acc - dacc));  // 1 - sigmoid, at its largest
    const double y = std::fabs(double(y_true[size_t(c)]));
    b[size_t(c)] = 1.1 * dacc + (exp_rel(a) * one_minus_sig + division_rel() + 2 * kU32) * y + kSiluFloor;
  }
  return b;
}

// Inputs of a case: T tokens of x, the taps, the state before the first token.
struct ConvInputs {
  Conv cv;
  std::vector<bf16> wb;
  std::vector<float> x, state0;
};

ConvInputs conv_inputs(int64_t T, int64_t C, int64_t K, bool zero_state, float x_scale, uint64_t seed) {
  ConvInputs in;
  in.cv.p.tokens = T, in.cv.p.channels = C, in.cv.p.kernel = K;
  Rng rng(seed);
  in.x = rng.fork(1).activations(T * C);
  in.state0 = zero_state ? std::vector<float>(size_t((K - 1) * C), 0.0f) : rng.fork(2).activations((K - 1) * C);
  for (float& v : in.x) v *= x_scale;
  for (float& v : in.state0) v *= x_scale;
  in.wb = rng.fork(3).bf16_normal_vec(C * K, 0.3);
  in.cv.w.resize(in.wb.size());
  for (size_t i = 0; i < in.wb.size(); ++i) in.cv.w[i] = bf16_to_f32(in.wb[i]);
  return in;
}

OutputSpec y_spec(std::vector<double> bound) {
  OutputSpec s;
  s.name = "y", s.kind = Kind::Reduction, s.bound = std::move(bound);
  return s;
}

OutputSpec state_spec() {
  OutputSpec s;
  s.name = "state", s.kind = Kind::Exact;
  return s;
}

// Decode: one CaseStep per token (tokens = 1 per dispatch), the state kept on the device between
// steps (the kernel's own output carries over: a state not written back, or shifted wrongly,
// fails state@t=0 and every later y). Every step compares y and the whole state.
OpCase conv_decode_case(const std::string& label, int64_t steps, int64_t C, int64_t K, bool zero_state,
                        float x_scale, uint64_t seed) {
  const ConvInputs in = conv_inputs(steps, C, K, zero_state, x_scale, seed);
  Conv1dStepParams p1 = in.cv.p;
  p1.tokens = 1;
  OpCase c = new_case("conv1d_step", label, seed);
  set_vars(c, p1);
  c.params += " steps=" + std::to_string(steps);
  const std::vector<float> x0(in.x.begin(), in.x.begin() + C);
  c.tensors["x"] = f32_tensor(x0);
  c.tensors["w"] = bf16_tensor(in.wb);
  c.tensors["state"] = f32_tensor(in.state0);
  c.tensors["y"] = output_f32(C);
  std::vector<float> state = in.state0, y(static_cast<size_t>(C));
  for (int64_t t = 0; t < steps; ++t) {
    CaseStep st;
    st.label = "t=" + std::to_string(t);
    const std::vector<float> xt(in.x.begin() + t * C, in.x.begin() + (t + 1) * C);
    st.upload["x"] = f32_tensor(xt);
    const std::vector<float> before = state;
    conv1d_step_ref<double>(p1, xt, in.cv.w, state, y);
    Conv one = in.cv;
    one.p = p1;
    st.outputs["y"] = y_spec(y_bound(one, xt.data(), before, y));
    st.truth["y"] = widen(y);
    if (K > 1) {
      st.outputs["state"] = state_spec();
      st.truth["state"] = widen(state);
    }
    c.steps.push_back(std::move(st));
  }
  c.flops = double(steps * C * (2 * K + 4));
  return c;
}

// Prefill: one dispatch over T tokens; y of every token and the final state.
OpCase conv_prefill_case(const std::string& label, int64_t T, int64_t C, int64_t K, uint64_t seed) {
  const ConvInputs in = conv_inputs(T, C, K, false, 1.0f, seed);
  return conv1d_step_instance(label, seed, in.cv.p, in.x, in.wb, in.state0);
}

}  // namespace

OpCase conv1d_step_instance(const std::string& label, uint64_t seed, const Conv1dStepParams& p,
                            std::span<const float> x, std::span<const bf16> wb, std::span<const float> state0) {
  const int64_t T = p.tokens, C = p.channels, K = p.kernel;
  Conv cv;
  cv.p = p;
  cv.w.resize(wb.size());
  for (size_t i = 0; i < wb.size(); ++i) cv.w[i] = bf16_to_f32(wb[i]);
  OpCase c = new_case("conv1d_step", label, seed);
  set_vars(c, p);
  c.tensors["x"] = f32_tensor(x);
  c.tensors["w"] = bf16_tensor(wb);
  c.tensors["state"] = f32_tensor(state0);
  c.tensors["y"] = output_f32(T * C);
  std::vector<float> state(state0.begin(), state0.end()), y(static_cast<size_t>(T * C));
  conv1d_step_ref<double>(p, x, cv.w, state, y);
  // Bounds token by token from the truth's own state history (the state is exact data, so the
  // kernel's window equals the truth's at every token).
  Conv one = cv;
  one.p.tokens = 1;
  std::vector<float> hist(state0.begin(), state0.end()), y1(static_cast<size_t>(C));
  std::vector<double> bound;
  for (int64_t t = 0; t < T; ++t) {
    const std::vector<float> xt(x.begin() + t * C, x.begin() + (t + 1) * C);
    const std::vector<float> before = hist;
    conv1d_step_ref<double>(one.p, xt, cv.w, hist, y1);
    const std::vector<double> b = y_bound(one, xt.data(), before, y1);
    bound.insert(bound.end(), b.begin(), b.end());
  }
  c.outputs["y"] = y_spec(std::move(bound));
  c.truth["y"] = widen(y);
  // The state is compared even when K = 1 (empty: nothing to compare then).
  if (K > 1) {
    c.outputs["state"] = state_spec();
    c.truth["state"] = widen(state);
  }
  c.flops = double(T * C * (2 * K + 4));
  return c;
}

std::vector<OpCase> conv1d_step_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  if (rem) {
    // Channels around the 256-wide workgroups, 16 decode steps each (K = 4, every Qwen model).
    for (int64_t C : {1, 33, 257, 4099})
      out.push_back(conv_decode_case("remainder channels " + std::to_string(C) + ", 16 steps", 16, C, 4, false, 1.0f,
                                     seed + uint64_t(C)));
    out.push_back(conv_decode_case("kernel 2, 16 steps", 16, 67, 2, false, 1.0f, seed + 1));
    out.push_back(conv_decode_case("kernel 1 (no state), 3 steps", 3, 31, 1, false, 1.0f, seed + 2));
    out.push_back(conv_decode_case("kernel 7, 16 steps", 16, 33, 7, false, 1.0f, seed + 3));
    // K = KMAX = 8, the manifest's limit: the window and tap arrays full (an array sized KMAX - 1,
    // or a tap loop running to j <= K, indexes past them; win[K - 1] is the one slot never written).
    out.push_back(conv_decode_case("kernel 8 (KMAX), 16 steps", 16, 33, 8, false, 1.0f, seed + 8));
    // |acc| up to ~200: silu's exp overflows for acc < -88.7 (y = -0 in the engines' form).
    out.push_back(conv_decode_case("|acc| up to ~200 (silu exp overflow), 4 steps", 4, 1031, 4, false, 40.0f, seed + 4));
    out.push_back(conv_prefill_case("remainder prefill 17 tokens, channels 67", 17, 67, 4, seed + 5));
    // Channels past 16384 (engines size buffers for the models' 8192 and 12288), both ways.
    out.push_back(conv_decode_case("remainder channels 16411, 4 steps", 4, 16411, 4, false, 1.0f, seed + 6));
    out.push_back(conv_prefill_case("remainder prefill 5 tokens, channels 16411", 5, 16411, 4, seed + 7));
  }
  if (real) {
    // C = 2*Hk*dk + Hv*dv: A17B 2*16*128 + 64*128 = 12288; A3B 2*16*128 + 32*128 = 8192.
    out.push_back(conv_decode_case("A17B 16 decode steps", 16, 12288, 4, false, 1.0f, seed + 10));
    out.push_back(conv_decode_case("A3B 16 decode steps from sequence start", 16, 8192, 4, true, 1.0f, seed + 11));
    out.push_back(conv_prefill_case("A17B prefill 64 tokens", 64, 12288, 4, seed + 12));
    out.push_back(conv_prefill_case("A3B prefill 16 tokens", 16, 8192, 4, seed + 13));
  }
  return out;
}

}  // namespace moe::compare
