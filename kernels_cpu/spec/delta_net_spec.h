// delta_net's spec: its shapes, its seeded inputs and its error bound, read by the CPU three-way
// check (kernels_cpu/check/delta_net_check.cpp), the GPU cases (compare/cases/delta_net_case.cpp,
// also for mutate) and, through the GPU backend, bisect. The op itself: kernels_cpu/ops/delta_net.h.
#pragma once
#include <span>
#include <vector>

#include "ops/delta_net.h"
#include "spec/precision_model.h"
#include "spec/shape.h"

namespace moe {

// Inputs as the layer produces them: q, k per head L2-normalised (|k| = 1, |q| = 1/sqrt(dk), as
// qk_norm leaves them), v ~ N(0, 1), g ~ U(0.9, 1), beta ~ U(0.3, 0.7), initial state
// 0.01 U(-1, 1) (mid-sequence). special_gates: each (token, head) instead draws one of g = 0 (hard
// reset), beta = 0, beta = 1, g = 0 with beta = 1, g = 1 with beta = 0 (identity), or the
// realistic gates (docs/ops/verification.md "Stateful ops").
// decay_log = 1: g holds log(g) of the same draws (a factor of 0 as kDeltaNetLogZero).
struct DeltaNetInputs {
  std::vector<float> q, k, v, g, beta, state0;
};
inline constexpr float kDeltaNetLogZero = -1e4f;
DeltaNetInputs delta_net_inputs(const DeltaNetParams& p, uint64_t seed, bool special_gates);

struct DeltaNetVariant {
  bool special_gates = false;
  bool prefill = false;  // the GPU runs the T tokens in one dispatch (else one per token, a decode)
};
using DeltaNetShape = SpecShape<DeltaNetParams, DeltaNetVariant>;
// Remainders: dk around subgroup widths (lanes past dk idle; several elements per lane), dv
// around 16-row slices, ratios r = Hv / Hk of 1, 2, 3; past the limits engines size for (130 v
// heads, heads wider than 512). Real: the A17B (Hk 16, Hv 64) and A3B (Hk 16, Hv 32) layers,
// dk = dv = 128, decode and prefill.
std::vector<DeltaNetShape> delta_net_shapes(bool remainders, bool real);

// The error bound follows the recurrence (first order in u). Per v-head h and state row r (a
// dk-vector; rows are independent) one token is the affine map r -> A r + beta g v_vi k with
// A = g (I - beta k k^T) (symmetric), so an implementation's error e = r_impl - r_truth evolves as
//     e' = A e + gamma - rho,
// gamma its rounding in this token, rho the truth's own rounding of its state to f32 (every tier
// and kernel stores an f32 state). ||A||_2 = g max(1, |1 - beta |k|^2|) <= 1 for g, beta in
// [0, 1] and |k| = 1: the recurrence is non-expansive and errors add up at most linearly over
// tokens; the bound uses the exact norm of the case's f32 k, so it holds whatever the inputs.
// Tracked per row: eps >= ||e||_2 and b_i >= |e_i| per element:
//   (A e)_i = g (e_i - beta k_i (k . e)), |k . e| <= kappa = min(|k| eps, sum |k_j| b_j)
//     -> p_i = g (b_i + beta |k_i| kappa);  ||A e|| <= ||A|| eps.
//   The step's local error, from the magnitudes m_i = |r_i| + b_i of the implementation's state:
//     s_i = g r_i rounds: u g m_i; kv = sum s_i k_i in any order (fused or not): m.sum(dk + 1)
//     sum g m_i |k_i| = M; delta = (v - kv) beta: D = beta M + 2u |delta| (two roundings, |delta|
//     including the propagated beta g kappa); S1_i = s_i + k_i delta: u (g m_i + |k_i delta|
//     + |S1_i|) + |k_i| D; the truth's rounding rho_i: u |S1_i|; the smallest normal for
//     subnormal (flushed) elements:  loc_i.
//   b_i' = min(p_i + loc_i, eps'),  eps' = ||A|| eps + ||loc||_2.
// o = S1 . q read from the implementation's updated state: m.sum(dk) sum |S1_i q_i| (the dot in
// any order) + |q . (A e)| <= min(|q| ||A|| eps, sum |q_i| p_i) + sum |q_i| loc_i, + u |o| for
// the truth's rounding and the smallest normal.
// Conventions (ops/delta_net.h): decay_log adds exp's relative error m.exp_rel(g) (at the f32 log
// g) to the decayed state's rounding, in loc_i (ex g m_i) and in kv (ex M), so it compounds over
// the tokens through the tracker as every local error does; head_group changes only which q/k
// head is read; out_scale multiplies o's bound by |scale| and adds one rounding u |scale| sum
// |S1_i q_i| (scale != 1), which also covers a kernel that scales q before the dot.
// Order: every sum is bounded in any order and every product's rounding once per term, so a
// kernel that forms kv from (g S) k without storing g S, or S1 = fma(g, S, k delta), is covered.
// A tracker that starts every token at zero, from the truth's state, bounds one isolated step
// (the CPU check); one carried over the tokens bounds a free-running state (the GPU cases: a
// kernel that corrupts what it carries over cannot hide behind a reset).
struct DeltaNetErrorTracker {
  std::vector<double> b;    // per state element [Hv, dv, dk]
  std::vector<double> eps;  // per state row [Hv, dv]
  explicit DeltaNetErrorTracker(const DeltaNetParams& p)
      : b(size_t(p.v_heads * p.value_dim * p.key_dim), 0.0), eps(size_t(p.v_heads * p.value_dim), 0.0) {}
};

// Token t: the truth's state R (f32, as every tier stores it) advances in place through
// delta_net_ref<double>; o (its [Hv, dv] output) and o_bound are written; the tracker advances to
// the state after the token, so tr.b bounds the state's elements.
void delta_net_token_step(const DeltaNetParams& p, const DeltaNetInputs& in, int64_t t, std::vector<float>& R,
                          DeltaNetErrorTracker& tr, float* o, double* o_bound, const PrecisionModel& m);
// The bound part of the step alone, for a caller that computed token t's truth itself: R0 and R
// the truth's f32 state before and after the token, o1 its output [Hv, dv].
void delta_net_token_bound(const DeltaNetParams& p, const DeltaNetInputs& in, int64_t t, const std::vector<float>& R0,
                           const std::vector<float>& R, std::span<const float> o1, DeltaNetErrorTracker& tr,
                           double* o_bound, const PrecisionModel& m);

}  // namespace moe
