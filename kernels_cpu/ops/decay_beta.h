// decay_beta: per-v-head decay g and write strength beta of the gated delta rule
// (docs/ops/linear-attention.md "Decay and beta", docs/ops/README.md "Scalar helpers"; HF
// Qwen3NextGatedDeltaNet.forward: g = -A_log.exp() * softplus(a + dt_bias), beta = b.sigmoid();
// the recurrence uses exp(g)).
//
// Shape contract (T tokens, Hv = v_heads):
//   a       [T, Hv] f32   in_proj_a output: feeds the DECAY (the naming trap of
//                         docs/ops/linear-attention.md "Decay and beta")
//   b       [T, Hv] f32   in_proj_b output: feeds beta
//   A_log   [Hv] f32
//   dt_bias [Hv] f32      bf16 in checkpoints, widened exactly
//   g       [T, Hv] f32   g = exp(-exp(A_log) * softplus(a + dt_bias)), in [0, 1]
//   beta    [T, Hv] f32   beta = sigmoid(b) = 1 / (1 + exp(-b)), no dt_bias
// g may be the same buffer as a and beta the same as b; no other overlap (checked).
//
// Tiers:
// - f32 (the engines, CPU-C/CPU-R/Metal/VK): u = a + dt_bias; softplus = logf(1 + expf(u));
//   g = expf(-(expf(A_log) * softplus)); beta = 1 / (1 + expf(-b)).
// - truth (f64): the same with a numerically stable softplus, u + log1p(exp(-u)) for u > 0 and
//   log1p(exp(u)) otherwise (MLX's logaddexp(u, 0) is this function).
// - fast: Eigen arrays with the stable softplus (an oracle should be accurate where it can).
// Where the engines' form is not accurate (the f32 tier shows it, by design):
// - u > ln(FLT_MAX) = 88.72: expf(u) = inf, so softplus = inf and g = exp(-inf) = 0, while the
//   truth is g = exp(-exp(A_log) * u) > 0. For real A = exp(A_log) >= 0.26 that is < 1e-10, but
//   for a tiny A it can be close to 1: the f32 error there is the whole of g.
// - u < -16.6: 1 + expf(u) rounds to 1 (e^u < u32 = 2^-24), softplus = 0 and g = 1 exactly,
//   while the truth is g = exp(-A e^u) = 1 - A e^u: an absolute error below A * 2^-24.
// The check (check/decay_beta_check.cpp) holds the f32 tier to the engines' defined g = 0
// (bit-exact) where expf(fl(a + dt_bias)) overflows, and to the truth elsewhere, the underflow
// region included (its error is inside the bound's absolute term); the fast tier to the truth
// everywhere. The tests pin both regions.
#pragma once
#include <cstdint>
#include <span>

namespace moe {

struct DecayBetaParams {
  int64_t tokens = 1;
  int64_t heads = 0;  // Hv
  template <class F>
  void visit(F&& f) const {
    f("tokens", tokens), f("heads", heads);
  }
};

template <class Acc>
void decay_beta_ref(const DecayBetaParams& p, std::span<const float> a, std::span<const float> b,
                    std::span<const float> A_log, std::span<const float> dt_bias, std::span<float> g,
                    std::span<float> beta);
void decay_beta_fast(const DecayBetaParams& p, std::span<const float> a, std::span<const float> b,
                     std::span<const float> A_log, std::span<const float> dt_bias, std::span<float> g,
                     std::span<float> beta);

// Shared by every tier: argument validation with messages naming the op.
void decay_beta_validate(const DecayBetaParams& p, std::span<const float> a, std::span<const float> b,
                         std::span<const float> A_log, std::span<const float> dt_bias, std::span<float> g,
                         std::span<float> beta);

}  // namespace moe
