// What the rotary specs (spec/rope_spec.h, spec/rope_yarn_spec.h) share: where a shape's
// positions come from, the inputs they draw, and the error analysis of an angle
// pos * theta^(-e) formed in f32 and of the rotation by it, as functions of a PrecisionModel.
// Read by those two specs, the rotary checks (kernels_cpu/check/rotary_check.h) and cases
// (compare/cases/rotary_cases.h).
#pragma once
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "core/rng.h"
#include "spec/precision_model.h"

namespace moe {

// A shape's positions, drawn from fork 7 of the shape's seed + seed_shift: `fixed`, then `drawn`
// more; or, where run > 0, `run` consecutive positions from fixed[0] or, none fixed, from a
// drawn start.
struct RotaryPositions {
  std::vector<int64_t> fixed;
  int drawn = 0;
  int64_t run = 0;
  int64_t seed_shift = 0;
  int64_t tokens() const { return run > 0 ? run : int64_t(fixed.size()) + drawn; }
};

struct RotaryInputs {
  std::vector<int64_t> positions;
  std::vector<float> x;
};

// Drawn positions lie in [0, draw_below), a drawn run's start in [0, start_below); x [tokens,
// row] is fork 1 of the seed: activations (RMS ~1 with outlier channels).
inline RotaryInputs rotary_inputs(const RotaryPositions& rp, uint64_t seed, int64_t row, int64_t draw_below,
                                  int64_t start_below) {
  RotaryInputs in;
  Rng rng = Rng(seed + uint64_t(rp.seed_shift)).fork(7);
  if (rp.run > 0) {
    const int64_t start = rp.fixed.empty() ? rng.below(start_below) : rp.fixed[0];
    for (int64_t t = 0; t < rp.run; ++t) in.positions.push_back(start + t);
  } else {
    in.positions = rp.fixed;
    for (int k = 0; k < rp.drawn; ++k) in.positions.push_back(rng.below(draw_below));
  }
  in.x = Rng(seed).fork(1).activations(rp.tokens() * row);
  return in;
}

// Angle, first order in u. theta^(-e), e = 2i/R, formed as exp2(-t), t = e log2(theta) (GLSL's
// pow(theta, -e) is defined so; powf on the CPU is within one exp_rel of theta^(e_f) itself):
//   e = float(2i) / float(R) to 2.5 ULP, or float(2i) * (1/R): 6u e;
//   log2(theta) to log_rel |log2 theta| (theta outside [0.5, 2]), else log_abs: dlog2;
//   t = e * log2(theta): + u. |dt| <= e dlog2 + 7u |t|;
//   exp2: exp_rel(|t| + dt), and the argument's error passes on as ln2 |dt|.
// (On the CPU e_f = fl(2i / R) is within u e, which 7u |t| ln 2 >= u e |ln theta| covers.)
inline double rotary_log2_err(double theta, const PrecisionModel& m) {
  return (theta < 0.5 || theta > 2.0) ? m.log_rel * std::fabs(std::log2(theta)) : m.log_abs;
}
inline double rotary_exp2_rel(double e, double log2_theta, double dlog2, const PrecisionModel& m) {
  const double tt = e * std::fabs(log2_theta), dt = e * dlog2 + 7 * m.u * tt;
  return m.exp_rel(tt + dt) + std::log(2.0) * dt;
}
// Pair i's frequency in the power form engines such as ggml use: theta_scale = theta^(-2/R)
// formed once (its own exp2 error, then rounded), then pow(theta_scale, i) per pair. The base's
// relative error ts_rel and log2's error grow with the exponent i:
//   t = i |log2 theta_scale|, dt = i (log_abs + ts_rel / ln 2) + u t,
//   relative error exp_rel(t + dt) + ln2 dt.
inline double rotary_power_form_rel(int64_t i, int64_t R, double log2_theta, double dlog2, const PrecisionModel& m) {
  const double ts_log2 = 2.0 / double(R) * std::fabs(log2_theta);
  const double ts_rel = rotary_exp2_rel(2.0 / double(R), log2_theta, dlog2, m) + 2 * m.u;
  const double t = double(i) * ts_log2, dt = double(i) * (m.log_abs + ts_rel / std::log(2.0)) + m.u * t;
  return m.exp_rel(t + dt) + std::log(2.0) * dt;
}
// The truth's own f64 angle (pow, reciprocals, product): (|ln theta| + 4) 2^-53 relative.
inline double rotary_truth_rel(double theta) { return (std::fabs(std::log(theta)) + 4) * 0x1.0p-53; }

// Where each (token, head) row of x keeps its `half` pairs: pair i at (i, i + half), or at
// (2i, 2i + 1) interleaved; its results always go to (i, i + half). Channels past 2 half are
// copied.
struct RotaryLayout {
  int64_t tokens, heads, row, half;
  bool interleaved;
};

// Per element of y, given pair i's exact inverse frequency inv[i] and the relative error inv_rel[i]
// of the angle's factors (inv_freq, float(pos) * inv_freq's rounding, the truth's own angle):
//   a = pos inv; float(pos) is exact below 2^24 (else 2u); the reduction to [-pi, pi]
//   (m.sincos_reduction): da = |a| (inv_rel + d_pos) + m.sincos_reduction(a).
// Rotation. A pair r = (x1, x2) rotated by a + da instead of a moves by 2 |sin(da/2)| |r| <= da |r|
// in each component; cos and sin add m.sincos_abs (|x1| + |x2|); rot_rel holds the products'
// and the sum's roundings (2u (|x1 c| + |x2 s|) <= 2u |r| (1 + 2^-10) by Cauchy-Schwarz, c^2 + s^2
// near 1), the truth's rounding to f32 (u |y| <= u scale |r|) and the scale's own error;
//   |y - y_truth| <= scale (|r| (da + rot_rel) + sincos_abs (|x1| + |x2|)) + the smallest normal.
// Copied channels: bound 0, so any difference fails there (random normals: equal values are
// equal bits).
inline std::vector<double> rotary_bound(const RotaryLayout& l, std::span<const int64_t> positions,
                                        std::span<const float> x, std::span<const double> inv,
                                        std::span<const double> inv_rel, double scale, double rot_rel,
                                        const PrecisionModel& m) {
  std::vector<double> bound(x.size(), 0.0);
  for (int64_t t = 0; t < l.tokens; ++t) {
    const double pos = double(positions[size_t(t)]);
    const double d_pos = pos >= 0x1.0p24 ? 2 * m.u : 0.0;
    for (int64_t i = 0; i < l.half; ++i) {
      const double a = pos * inv[size_t(i)];
      const double da = a * (inv_rel[size_t(i)] + d_pos) + m.sincos_reduction(a);
      const int64_t ia = l.interleaved ? 2 * i : i, ib = l.interleaved ? 2 * i + 1 : i + l.half;
      for (int64_t h = 0; h < l.heads; ++h) {
        const size_t row = size_t((t * l.heads + h) * l.row);
        const double x1 = x[row + size_t(ia)], x2 = x[row + size_t(ib)];
        bound[row + size_t(i)] = bound[row + size_t(i + l.half)] =
            scale * (std::hypot(x1, x2) * (da + rot_rel) + m.sincos_abs * (std::fabs(x1) + std::fabs(x2))) +
            kMinNormal32;
      }
    }
  }
  return bound;
}

}  // namespace moe
