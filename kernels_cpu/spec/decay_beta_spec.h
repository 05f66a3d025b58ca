// decay_beta's spec: its shapes, its seeded inputs and its error bounds, read by the CPU three-way
// check (kernels_cpu/check/decay_beta_check.cpp), the GPU cases (compare/cases/decay_beta_case.cpp,
// also for mutate) and, through the GPU backend, bisect. The op itself: kernels_cpu/ops/decay_beta.h.
#pragma once
#include <span>
#include <vector>

#include "core/bf16.h"
#include "ops/decay_beta.h"
#include "spec/precision_model.h"
#include "spec/shape.h"

namespace moe {

// How a shape draws: a ~ U(a1, a2) if uniform, else N(a1, a2^2) (in_proj_a outputs; the edge
// cases push u = a + dt_bias into both softplus saturations); A = exp(A_log) ~ U(A_lo, A_hi) (HF
// init A ~ U(0, 16); [1, 16] as in the checkpoints); b ~ N(0, b_sd^2). cpu / gpu: which judges
// run it (two shapes are the same draw under each judge's own label).
struct DecayBetaDraw {
  double a1, a2;
  bool uniform;
  double A_lo, A_hi, b_sd;
  bool cpu = true, gpu = true;
};
using DecayBetaShape = SpecShape<DecayBetaParams, DecayBetaDraw>;
// Remainders: heads around the GPU's 64-wide workgroups and the CPU's vector widths, past the 64
// or 128 a kernel may hard-wire and past 512 (one token); both softplus saturations, its
// underflow (u < -16.6) and overflow (u > 88.72, tiny A keeping the true g far from 0), beta's
// saturation (b far outside [-88.7, 88.7]). Real: A17B (64 v heads) and A3B (32), decode and
// 16 to 64 tokens.
std::vector<DecayBetaShape> decay_beta_shapes(bool remainders, bool real);

// dt_bias: the inverse softplus of dt ~ logU(1e-3, 0.1) (HF init), in [-6.9, -2.25], rounded to
// bf16 (dtb, and widened exactly in dt_bias).
struct DecayBetaInputs {
  std::vector<float> a, b, A_log, dt_bias;
  std::vector<bf16> dtb;
};
DecayBetaInputs decay_beta_inputs(const DecayBetaParams& p, uint64_t seed, const DecayBetaDraw& d);

// Absolute bounds per element of g and beta, given the truth's (f64, rounded once to f32).
// First order in u. With ud = a + dt_bias (exact in f64), sp = softplus(ud), s = sigmoid(ud),
// A = exp(A_log), P = A sp, g = exp(-P), all in f64:
//   u = fl(a + dt_bias): u |ud|, which moves sp by s u |ud|.
//   softplus, either form an implementation may use:
//     engines' log(1 + exp(u)): exp's m.exp_rel(ud) reaches the log damped by E / (1 + E) = s;
//       1 + E rounds (u); the log: m.log_abs (1 + E in [1, 2], u <= 0) or m.log_rel sp;
//     stable max(u, 0) + log(1 + exp(-|u|)) (or log1p): exp's error damped by
//       e^-|u| / (1 + e^-|u|) <= s; 1 + E (u); the log of [1, 2]: m.log_abs; the add: u sp.
//     Both: dsp <= s (|ud| u + m.exp_rel(ud)) + u + m.log_abs + m.log_rel sp (log_rel >= u).
//     (Below u = -16.6 the engines' form gives sp = 0 against the truth's e^u < u: within the u.)
//   P = exp(A_log) * sp: exp's m.exp_rel(A_log), the product u: dP <= (exp_rel + u) P + A dsp.
//   g = exp(-P): the argument's error moves g by g dP, exp's own m.exp_rel(P) g; the truth's
//     rounding u g; the smallest normal for g flushed or subnormal (P > 87.3).
//   beta = 1 / (1 + exp(-b)): exp's m.exp_rel(|b|) damped by E / (1 + E) = 1 - beta, 1 + E (u),
//     the division m.division_rel, the truth's rounding u; the smallest normal (for b < -87.3,
//     1 + E >= 2^126 leaves the range where Vulkan defines division, and E overflows in f32 past
//     -88.7: an implementation may return 0 there, and beta_true <= 2^-126).
// Where the engines' expf(fl(a + dt_bias)) overflows (u past 88.72) their g is exp(-inf) = 0
// whatever A is (docs/ops/verification.md "Edge cases"): each judge holds the engines' form to
// that defined value there (the check and the case say how); this bound is the truth's.
struct DecayBetaBounds {
  std::vector<double> g, beta;
};
DecayBetaBounds decay_beta_bound(const DecayBetaParams& p, std::span<const float> a, std::span<const float> b,
                                 std::span<const float> A_log, std::span<const float> dt_bias,
                                 std::span<const float> g, std::span<const float> beta, const PrecisionModel& m);

}  // namespace moe
