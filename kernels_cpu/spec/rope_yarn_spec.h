// rope_yarn's spec: its shapes, its seeded inputs and its error bound, read by the CPU three-way
// check (kernels_cpu/check/rope_yarn_check.cpp), the GPU cases (compare/cases/rope_yarn_case.cpp,
// also for mutate), rope_yarn_f32_bound (ops/rope_yarn.h) and, through the GPU backend, bisect.
// The op itself: kernels_cpu/ops/rope_yarn.h; what it shares with rope: spec/rotary_bound.h.
#pragma once
#include <span>
#include <vector>

#include "ops/rope_yarn.h"
#include "spec/rotary_bound.h"
#include "spec/shape.h"

namespace moe {

using RopeYarnShape = SpecShape<RopeYarnParams, RotaryPositions>;
// Positions: the start, the first step, the original context's end (4095, and 4096 where the
// list is fixed), the edge of 16 bits and the last of DeepSeek-V3's 163840, alone or with three
// drawn in [0, 163840); one drawn (a decode token); or a prefill run of 64.
// Remainders: a lone pair, R not a power of two (inexact 2i/R), the ramp's three regions at a
// small R, m != 1 (either mscale branch, and a ratio), no scaling (factor 1), another regime
// (theta 1e6, factor 4 over 8192), the ramp's singularity guard (low == high), half-split pairs,
// 129 pairs and a long head, 129 heads. Real: Cogito-V2 / DeepSeek-V3 MLA (RopeYarnParams'
// defaults: R 64, theta 1e4, factor 40 over 4096, beta 32 / 1, mscale 1 / 1): q_pe of 128 heads
// and the shared k_pe, HF's interleaved pairs and MFR's half-split ones (docs/ops/verification.md
// "MFR YaRN pairing").
std::vector<RopeYarnShape> rope_yarn_shapes(bool remainders, bool real);

// x: q_pe / k_pe straight from q_b_proj / kv_a_proj (no norm on the rope part): activations.
RotaryInputs rope_yarn_inputs(const RopeYarnParams& p, uint64_t seed, const RotaryPositions& positions);

// Per element of y against the truth (every formula of ops/rope_yarn.h in f64, y rounded to f32),
// for any f32 evaluation of the YaRN angle: a kernel under the device's model, the CPU tiers and
// HF's float32 path under cpu_f32_model(). First order in u; the angle and rotation as
// spec/rotary_bound.h. Frequencies, pair i, e = 2i/R:
//   extra = theta^-e: rotary_exp2_rel (eps_extra), or 1 / powf on the CPU (within eps_extra + u:
//     the spare u of extra's term below);
//   inter = extra / factor, or 1 / (factor pf): eps_inter = eps_extra + division_rel + u;
//   w = clamp((i - low) / (high - low), 0, 1) from low and high in f32: integers (exact) except
//     HF's singularity guard high = low + 0.001 (rounded: u |high|); the subtraction is exact
//     (Sterbenz), the division division_rel: eps_w = division_rel + u |high| / |high - low|;
//     clamp is 1-Lipschitz and flat past 1: |dw| <= 1.01 eps_w min(|w_raw|, 1.01);
//   inv = inter w + extra (1 - w), all terms >= 0; 1 - w, both products and the sum round
//     (HF's inter (1 - (1 - w)) rounds once more, within the spare u of each term):
//     |dinv| <= |extra - inter| |dw| + inter w (eps_inter + 3u) + extra (1 - w) (eps_extra + 4u),
//     times 1.01 for the second-order products of these errors;
//   inv_rel = dinv / inv + u (float(pos) * inv) + the truth's own angle.
// The attention factor m scales the rotation; rot_rel = 6u + dm: c = m cos and s = m sin round (u
// each), the products and the sum 3u, the truth's rounding u; dm: m as an f32 push constant (u),
// or computed by the kernel from ln(factor) (both get_mscale values to 9u + 0.1 mscale log_abs,
// the division 5u), or by the CPU tiers in f32 (13u).
// At Cogito's last position (163839), pair 0 (inv = 1): da ~0.18 rad under the Vulkan rules (0.16
// from inv_rel, 0.02 from the reduction into [-pi, pi]); the interpolated pairs past the ramp
// (i >= 23, a <= 5.5 rad) to ~1.4e-4 rad, where the rules' 2^-11 for sin and cos dominates.
std::vector<double> rope_yarn_bound(const RopeYarnParams& p, std::span<const int64_t> positions,
                                    std::span<const float> x, const PrecisionModel& m);

}  // namespace moe
