#include <algorithm>
#include <cmath>

#include "compare/cases/case_util.h"
#include "compare/cases/instances.h"
#include "compare/decide/precision.h"
#include "core/rng.h"
#include "ops/rope.h"

namespace moe::compare {
namespace {

// Per-element bound for a kernel that forms the angle in f32 (as every engine does) under the
// Vulkan precision rules, against the f64 truth; first order in u = 2^-24, one ULP of a value
// at most 2u of it. The reasoning of kernels_cpu/check/rope_check.cpp, with the GPU's
// transcendentals in place of libm's. The figures below are the Vulkan rules; the code takes
// them from decide/precision.h (the rules, or the device's calibrated budgets: sin and cos are
// then ~1.5e-7 instead of 2^-11 on every driver measured so far).
//
// Angle. Exactly a = pos * theta^(-e), e = 2i/R, i.e. a = pos * 2^(-t), t = e log2(theta).
//   e_k = float(2i) / float(R): 2.5 ULP = 5u, or float(2i) * (1/R): 6u.   |de| <= 6u e
//   log2(theta): 3 ULP = 6u |log2 theta| (theta outside [0.5, 2]), else 2^-21 absolute.
//   t_k = e_k * log2(theta): + u.  |dt| <= e dL + 7u |t|
//   exp2(-t_k): 3 + 2|t| ULP = (6 + 4|t|)u relative, and the argument's error ln2 |dt|.
//   (GLSL pow(theta, -e) is defined as this exp2(-e * log2(theta)): the same budget.)
//   A kernel forming 1 / pow(theta, e) adds a 2.5 ULP division: 5u (budgeted).
//   ggml's pow(theta_scale, i) instead: power_form_rel; eps_inv is the larger of the two.
//   a_k = float(pos) * inv_freq: + u, and float(pos) is exact below 2^24 (else 1 ULP: 2u).
//   Reduction to [-pi, pi] (Vulkan defines sin/cos precision only there): r = a - k 2pi_f with
//   an f32 2pi (|2pi_f - 2pi| = 0.47u 2pi, times |k| <= |a|/2pi + 1), the product's and the
//   difference's roundings and one fold: <= 1.47u |a| + 13u; budget 2u |a| + 16u.
//   The truth's own angle (f64 pow, reciprocal, product): (|ln theta| + 4) 2^-53 |a|.
//   da = |a| (eps_inv + u + d_pos + 2u + (|ln theta| + 4) 2^-53) + 16u.
// Rotation. A pair r = (x1, x2) rotated by a + da instead of a moves by
// 2 |sin(da/2)| |r| <= da |r| in each component. cos and sin: absolute error 2^-11 each in
// [-pi, pi] (Vulkan): 2^-11 (|x1| + |x2|). The two products and the sum (or an FMA):
// 2u (|x1 c| + |x2 s|) <= 2u |r| (1 + 2^-10) (Cauchy-Schwarz, c^2 + s^2 near 1): 3u |r|; the
// truth's rounding to f32: u |y| <= u |r|.
// Hence |y - y_true| <= |r| (da + 4u) + 2^-11 (|x1| + |x2|) + the smallest normal.
// At position 0 this is ~1e-3 |r| (the trig rule); at 10^6, pair 0 (a = 10^6 rad), da reaches
// ~0.8 rad: the f32 angle itself is then only known to ~0.06 rad, and Vulkan's 3 ULP exp2 at 0
// allows 0.36 rad more: a kernel may rotate such a pair by up to ~0.8 rad off and still be
// conforming, while the pairs of large i (small angles) stay tightly checked.
// The tail channels [R, D) are copied: bound 0, so any difference in value fails there (the
// reduction decision's error is |found - truth|: the inputs are random normals, never +-0 or
// NaN, so equal values are equal bits; the kernel copies words, the exact form).
// ggml's angle: inv_freq_i = pow(theta_scale, i) with theta_scale = theta^(-2/R) rounded to f32
// (relative error ts_rel), i.e. exp2(i * log2(theta_scale)): theta_scale lies in [0.5, 2], so
// log2 is within log_abs absolute, and theta_scale's own error moves log2 by ts_rel / ln 2;
// both times i; the product i * log2(.) rounds (u |t|); exp2 adds exp_rel(|t|) and passes the
// argument's error on as ln 2 |dt|. The error grows with i (R = 512: 255 steps) where the direct
// form's does not: a conforming kernel written this way must pass too.
double power_form_rel(double i, double ts_rel, double abs_log2_ts) {
  const double t = i * abs_log2_ts;
  const double dt = i * (log_abs() + ts_rel / std::log(2.0)) + kU32 * t;
  return exp_rel(t + dt) + std::log(2.0) * dt;
}

std::vector<double> rope_bound(const RopeParams& p, std::span<const int64_t> positions,
                               std::span<const float> x) {
  const int64_t D = p.head_dim, R = p.rotary_dim, half = R / 2;
  const double theta = double(p.theta);
  const double log2_theta = std::log2(theta), ln_theta = std::fabs(std::log(theta));
  const double dlog2 = (theta < 0.5 || theta > 2.0) ? log_ulp_rel() * std::fabs(log2_theta) : log_abs();
  // ggml's form (see power_form_rel): theta_scale = pow(theta, -2/R), its own error as one
  // exponent step of the form above.
  const double log2_ts = -2.0 / double(R) * log2_theta;
  const double ts_tt = std::fabs(log2_ts), ts_dt = (2.0 / double(R)) * dlog2 + 7 * kU32 * ts_tt;
  const double ts_rel = exp_rel(ts_tt + ts_dt) + std::log(2.0) * ts_dt + 2 * kU32;
  std::vector<double> bound(x.size(), 0.0);
  for (int64_t t = 0; t < p.tokens; ++t) {
    const double pos = double(positions[size_t(t)]);
    const double d_pos = pos >= 0x1.0p24 ? 2 * kU32 : 0.0;
    for (int64_t i = 0; i < half; ++i) {
      const double e = double(2 * i) / double(R);
      const double tt = std::fabs(e * log2_theta);
      const double dt = e * dlog2 + 7 * kU32 * tt;
      const double eps_inv = std::max(exp_rel(tt + dt) + std::log(2.0) * dt + division_rel(),
                                      power_form_rel(double(i), ts_rel, std::fabs(log2_ts)));
      const double a = pos * std::pow(theta, -e);
      const double da = a * (eps_inv + kU32 + d_pos + 2 * kU32 + (ln_theta + 4) * 0x1.0p-53) + 16 * kU32;
      for (int64_t h = 0; h < p.heads; ++h) {
        const size_t b = size_t((t * p.heads + h) * D + i);
        const double x1 = x[b], x2 = x[b + size_t(half)];
        const double r = std::hypot(x1, x2);
        bound[b] = bound[b + size_t(half)] =
            r * (da + 4 * kU32) + sincos_abs() * (std::fabs(x1) + std::fabs(x2)) + kMinNormal32;
      }
    }
  }
  return bound;
}

// x: q/k after their per-head norm, RMS ~1 with outlier channels. Positions: a uint buffer
// (the kernel's shape contract); the op's int64 positions in [0, 2^31) fit.
}  // namespace

OpCase rope_instance(const std::string& label, uint64_t seed, const RopeParams& p, std::span<const int64_t> positions,
                     std::span<const float> x) {
  OpCase c = new_case("rope", label, seed);
  set_vars(c, p);
  const int64_t n = p.tokens * p.heads * p.head_dim;
  std::vector<float> y(static_cast<size_t>(n));
  rope_ref<double>(p, positions, x, y);
  set_rotary_tensors(c, positions, x, y, rope_bound(p, positions, x));
  return c;
}

namespace {

OpCase rope_case(const char* label, int64_t heads, int64_t D, int64_t R, float theta,
                 const std::vector<int64_t>& positions, uint64_t seed) {
  RopeParams p;
  p.tokens = int64_t(positions.size()), p.heads = heads, p.head_dim = D, p.rotary_dim = R, p.theta = theta;
  Rng rng(seed);
  const std::vector<float> x = rng.fork(1).activations(p.tokens * heads * D);
  return rope_instance(label, seed, p, positions, x);
}

// The positions every decode-like case visits: the start, the first step, a typical context,
// the edge of 16 bits and a million-token context, plus three drawn from the seed in [0, 10^6].
std::vector<int64_t> decode_positions(uint64_t seed) {
  std::vector<int64_t> pos{0, 1, 4095, 65535, 1000000};
  Rng rng = Rng(seed).fork(7);
  for (int k = 0; k < 3; ++k) pos.push_back(rng.below(1000001));
  return pos;
}

// One decode token's position, drawn from the seed in [0, 10^6].
std::vector<int64_t> one_position(uint64_t seed) { return {int64_t(Rng(seed).fork(7).below(1000001))}; }

}  // namespace

std::vector<OpCase> rope_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  if (rem) {
    // (D, R, theta): a lone pair, an odd tail, R not a power of two, no tail, a long head;
    // thetas 1e4 (Llama), 1e6 and 1e7 (Qwen3.5/3.6).
    struct Shape {
      int64_t D, R;
      float theta;
    };
    for (const Shape sh : {Shape{2, 2, 1e4f}, Shape{31, 2, 1e7f}, Shape{33, 30, 1e4f}, Shape{67, 66, 1e7f},
                           Shape{64, 64, 1e6f}, Shape{4099, 64, 1e7f}, Shape{300, 260, 1e7f}}) {
      const uint64_t s = seed + uint64_t(sh.D + sh.R);
      const std::string label = "remainder D " + std::to_string(sh.D) + " R " + std::to_string(sh.R);
      out.push_back(rope_case(label.c_str(), 3, sh.D, sh.R, sh.theta, decode_positions(s), s));
    }
    // Past the limits engines size for, one token (decode): head_dim 512 (twice the models'),
    // with the models' quarter rotary and fully rotary (256 pairs), and 129 heads (more than the
    // 64 or 128 a kernel may hard-wire).
    out.push_back(rope_case("remainder T 1 D 512 R 128", 3, 512, 128, 1e7f, one_position(seed + 512), seed + 512));
    out.push_back(rope_case("remainder T 1 D 512 R 512", 2, 512, 512, 1e7f, one_position(seed + 513), seed + 513));
    out.push_back(rope_case("remainder T 1 heads 129 D 256 R 64", 129, 256, 64, 1e7f, one_position(seed + 514), seed + 514));
  }
  if (real) {
    // Full attention of A17B (32 q heads, 2 kv heads) and A3B (16 / 2): D 256, R 64, theta 1e7.
    out.push_back(rope_case("A17B q (32 heads)", 32, 256, 64, 1e7f, decode_positions(seed), seed));
    out.push_back(rope_case("A17B/A3B k (2 heads)", 2, 256, 64, 1e7f, decode_positions(seed + 1), seed + 1));
    out.push_back(rope_case("A3B q (16 heads)", 16, 256, 64, 1e7f, decode_positions(seed + 2), seed + 2));
    // A prefill chunk of 64 consecutive positions from a start drawn from the seed.
    const int64_t start = Rng(seed + 3).fork(7).below(1000000 - 63);
    std::vector<int64_t> chunk(64);
    for (int64_t t = 0; t < 64; ++t) chunk[size_t(t)] = start + t;
    out.push_back(rope_case("A17B q prefill 64", 32, 256, 64, 1e7f, chunk, seed + 3));
    // Decode: one token per dispatch, at every head count of both models.
    out.push_back(rope_case("A17B decode T 1 q (32 heads)", 32, 256, 64, 1e7f, one_position(seed + 4), seed + 4));
    out.push_back(rope_case("A3B decode T 1 q (16 heads)", 16, 256, 64, 1e7f, one_position(seed + 5), seed + 5));
    out.push_back(rope_case("A17B/A3B decode T 1 k (2 heads)", 2, 256, 64, 1e7f, one_position(seed + 6), seed + 6));
  }
  return out;
}

}  // namespace moe::compare
