// glu's spec: its shapes, its seeded inputs and its error bound, read by the CPU three-way check
// (kernels_cpu/check/glu_check.cpp) and the GPU cases (compare/cases/glu_case.cpp, also for
// mutate). The op itself: kernels_cpu/ops/glu.h.
#pragma once
#include <span>
#include <vector>

#include "ops/glu.h"
#include "spec/precision_model.h"
#include "spec/shape.h"

namespace moe {

// wide: gate uniform in [-100, 100], where exp(-gate) and exp(2 v) overflow f32 and the GELUs
// saturate; otherwise gate as a projection's output (N(0, 1) with outlier channels, x20).
struct GluVariant {
  bool wide = false;
};

// gate as above, up N(0, 1).
struct GluInputs {
  std::vector<float> gate, up;
};
GluInputs glu_inputs(const GluParams& p, uint64_t seed, const GluVariant& v);

// Remainders, for each act: n 1, 3 and odd widths around subgroup, vector and 256-wide
// workgroups, rows 3; the wide gates. Real: the Qwen3.5 (A17B, A3B) expert and shared-expert
// widths and DeepSeek-V3's expert (2048) and dense (18432) intermediates with SiLU, decode
// (rows 1) and prefill; both GELUs at DeepSeek's expert width.
std::vector<SpecShape<GluParams, GluVariant>> glu_shapes(bool remainders, bool real);

// Per element of y, given the truth y (f64, rounded once to f32), first order in u. With g, up
// the inputs and y* = act(g) up exact:
//  SiLU: exp(-g) within r = m.exp_rel(-g) (1 where |g| > 87: exp's result leaves f32's normal
//   range; an overflow to inf gives 0, so the computed value lies in [0, y*]: error <= |y*|, and
//   a device that returns 0 there sits just under its bound: the wide gates' g < -88.7),
//   seen by 1 + E scaled by E / (1 + E); 1 + E, the product with up and one more product (an
//   engine's g * (1 / (1 + E))) round once each, the division: (r E/(1+E) + 3u + division_rel) |y*|.
//  GELU: y = (0.5 g) B up with B = 1 + tanh(v) or 1 + erf(x) in [0, 2]: two product roundings
//   (2u |y*|; 0.5 g is exact) and B's absolute error dB times 0.5 |g up|:
//   tanh: v = c g (1 + k g g) or c (g + k g^3): at most 6 roundings and the f32 constants c, k
//     (each within u), no cancellation (every term has g's sign): |dv| <= 8u |v|, moving B by
//     sech^2(v) 8u |v|. B itself, the larger of the two forms engines use:
//       2 - 2 / (exp(2v) + 1): q = 2 / (E + 1) = 1 - tanh v; exp's error moves q by
//       r q E / (E + 1) = r sech^2(v) / 2 (r = m.exp_rel(2v), 1 outside |2v| <= 87 as above),
//       E + 1 and the division by q (u + division_rel), 2 - q by u B;
//       1 + tanh(v): m.tanh_abs(v) + u B.
//   erf: x = g (1/sqrt 2)_f32 within 2u |x|, moving B by (2/sqrt(pi)) e^-x^2 2u |x|;
//     1 + erf(x): m.erf_abs(x) + u B.
// Plus the truth's rounding u |y*| and, for a flushed subnormal intermediate and product,
// the smallest normal (1 + |up|).
std::vector<double> glu_bound(const GluParams& p, std::span<const float> gate, std::span<const float> up,
                              const PrecisionModel& m);

}  // namespace moe
