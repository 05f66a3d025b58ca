// rope's spec: its shapes, its seeded inputs and its error bound, read by the CPU three-way check
// (kernels_cpu/check/rope_check.cpp), the GPU cases (compare/cases/rope_case.cpp, also for mutate)
// and, through the GPU backend, bisect. The op itself: kernels_cpu/ops/rope.h; what it shares
// with rope_yarn: spec/rotary_bound.h.
#pragma once
#include <span>
#include <vector>

#include "ops/rope.h"
#include "spec/rotary_bound.h"
#include "spec/shape.h"

namespace moe {

using RopeShape = SpecShape<RopeParams, RotaryPositions>;
// Positions: the start, the first step, a typical context, the edge of 16 bits and a
// million-token context (where the f32 angle is off by ~0.1 rad), alone or with three drawn in
// [0, 10^6]; one drawn (a decode token); or a prefill run of 64.
// Remainders: a lone pair, an odd tail, R not a power of two (inexact 2i/R), no tail, a long
// head, 130 pairs; thetas 1e4 (Llama), 1e6 and 1e7 (Qwen3.5/3.6); past the limits engines size
// for (D 512, 256 pairs, 129 heads). Real: A17B (32 q heads, 2 kv heads) and A3B (16 / 2) full
// attention, D 256, R 64, theta 1e7.
std::vector<RopeShape> rope_shapes(bool remainders, bool real);

// x: q/k after their per-head norm, RMS ~1 with the outlier channels the norm weights create.
RotaryInputs rope_inputs(const RopeParams& p, uint64_t seed, const RotaryPositions& positions);

// Per element of y, against the f64 truth, for an angle formed in f32 (as every engine does); the
// angle and the rotation as spec/rotary_bound.h, scale 1 and rot_rel 4u (3u for the products and
// the sum, u for the truth's rounding). inv_freq = 1 / theta^e, either way a kernel may form it:
//   directly: exp2 as rotary_exp2_rel, and a division (m.division_rel), or exp2(-t) at once;
//   ggml's pow(theta_scale, i), theta_scale = theta^(-2/R) in f32 (one exponent step of the
//     direct form, + 2u for its rounding: ts_rel), i.e. exp2(i log2(theta_scale)): theta_scale
//     lies in [0.5, 2], so log2 is within log_abs, and theta_scale's own error moves it by
//     ts_rel / ln 2, both times i; the product rounds (u |t|); exp2 adds exp_rel(|t|) and passes
//     the argument's error on as ln2 |dt|. It grows with i (R = 512: 255 steps) where the direct
//     form's does not: a conforming kernel written this way must pass too.
//   inv_rel = the larger of the two + u (float(pos) * inv_freq) + the truth's own angle.
// The CPU tiers form 1 / powf(theta, fl(2i / R)): within the direct form under cpu_f32_model()
// (powf within exp_rel, the division u, glibc's cosf and sinf within 2u at any argument).
// At a 10^6 position, pair 0 (a = 10^6 rad), the Vulkan rules allow da ~0.8 rad (the f32 angle
// itself is known to ~0.06 rad, 3 ULP of exp2 at 0 adds 0.36 rad): a kernel may rotate such a pair
// that far off and still conform, while the pairs of small angles stay tightly checked.
std::vector<double> rope_bound(const RopeParams& p, std::span<const int64_t> positions, std::span<const float> x,
                               const PrecisionModel& m);

}  // namespace moe
