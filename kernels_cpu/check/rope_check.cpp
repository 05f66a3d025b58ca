#include <cmath>

#include "core/params.h"
#include "core/rng.h"
#include "ops/rope.h"

namespace moe {
namespace {

// The positions every case visits: the start, the first step, a typical context, the edge of
// 16 bits and a million-token context (where the f32 angle is off by ~0.1 rad).
const std::vector<int64_t> kPositions{0, 1, 4095, 65535, 1000000};

// Per-element bound for the f32 and fast tiers against the truth, first order in u.
//
// Angle. The exact angle is a = pos * theta^(-e), e = 2i/R. The f32 tiers compute
//   e_f = fl((float)(2i) / (float)R)     (exact when R is a power of two)
//   p_f = powf(theta, e_f)               theta^(e_f) within 1 ulp (glibc: < 1 ulp), i.e. 2u relative,
//                                        and theta^(e_f) = theta^e (1 + (e_f - e) ln theta)
//   inv = 1 / p_f                        + u
//   a_f = fl((float)pos * inv)           + u, and (float)pos has relative error d_pos (0 below 2^24)
// so |a_f - a| <= |a| (|e_f - e| |ln theta| + 4u + d_pos). The truth's own angle (f64 e, pow,
// reciprocal, product) is within |a| (|ln theta| + 4) 2^-53; that is added too.
// Rotation. Rotating a pair r = (x1, x2) by a_f instead of a moves it by exactly
// 2 |sin((a_f - a)/2)| |r| <= |a_f - a| |r| (in each component). cosf/sinf within 1 ulp (2u
// relative to |c|, |s|), the two products and the sum (or one FMA) add 2u (|x1 c| + |x2 s|); with
// |x1 c| + |x2 s| <= |r| (Cauchy-Schwarz, c^2 + s^2 = 1) that is 4u |r|; the truth's rounding to
// f32 adds u |y| <= u |r|.
// Hence |y - y_true| <= |r| (|a_f - a| + 5u) + the smallest normal (results can be subnormal).
// The tail channels are copied: bound 0.
std::vector<double> rope_bound(const RopeParams& p, std::span<const int64_t> positions, std::span<const float> x) {
  const int64_t D = p.head_dim, R = p.rotary_dim, half = R / 2;
  const double log_theta = std::fabs(std::log(double(p.theta)));
  std::vector<double> bound(x.size(), 0.0);
  for (int64_t t = 0; t < p.tokens; ++t) {
    const double pos = double(positions[t]);
    const double d_pos = pos > 0 ? std::fabs(double(float(positions[t])) - pos) / pos : 0.0;
    for (int64_t i = 0; i < half; ++i) {
      const double e = double(2 * i) / double(R);
      const double e_f = double(float(2 * i) / float(R));
      const double a = pos * std::pow(double(p.theta), -e);
      const double da = a * (std::fabs(e_f - e) * log_theta + 4 * kU32 + d_pos) + a * (log_theta + 4) * 0x1.0p-53;
      for (int64_t h = 0; h < p.heads; ++h) {
        const int64_t base = (t * p.heads + h) * D;
        const double r = std::hypot(double(x[base + i]), double(x[base + i + half]));
        bound[base + i] = bound[base + i + half] = r * (da + 5 * kU32) + kMinNormal32;
      }
    }
  }
  return bound;
}

CheckResult run_case(const char* label, const RopeParams& p, const std::vector<int64_t>& positions, uint64_t seed) {
  Rng rng(seed);
  // q/k after their per-head norm: RMS ~1 with the outlier channels the norm weights create.
  const std::vector<float> x = rng.fork(1).activations(p.tokens * p.heads * p.head_dim);
  std::vector<float> truth(x.size()), r32(x.size()), fast(x.size());

  CheckResult res{"rope", label, params_to_string(p), seed};
  res.truth_seconds = time_call([&] { rope_ref<double>(p, positions, x, truth); });
  res.ref32.seconds = time_call([&] { rope_ref<float>(p, positions, x, r32); });
  res.fast.seconds = time_call([&] { rope_fast(p, positions, x, fast); });

  const std::vector<double> bound = rope_bound(p, positions, x);
  res.ref32.add("y", truth, r32, bound);
  res.fast.add("y", truth, fast, bound);
  return res;
}

}  // namespace

std::vector<CheckResult> rope_check(uint64_t seed, CheckScope scope) {
  std::vector<CheckResult> out;
  const int64_t T = int64_t(kPositions.size());
  if (scope_has_remainders(scope)) {
    // (head_dim, rotary_dim, theta): a lone pair, an odd tail, R not a power of two (inexact
    // 2i/R), no tail at all, a long head; thetas of 1e4 (Llama), 1e6 and 1e7 (Qwen3.5).
    struct Shape {
      int64_t D, R;
      float theta;
    };
    for (const Shape s : {Shape{2, 2, 1e4f}, Shape{31, 2, 1e7f}, Shape{33, 30, 1e4f}, Shape{67, 66, 1e7f},
                          Shape{64, 64, 1e6f}, Shape{4099, 64, 1e7f}}) {
      const std::string label = "remainder D " + std::to_string(s.D) + " R " + std::to_string(s.R);
      out.push_back(run_case(label.c_str(), {T, 3, s.D, s.R, s.theta}, kPositions, seed + s.D + s.R));
    }
  }
  if (scope_has_real(scope)) {
    // Full attention of Qwen3.5-397B-A17B (32 q heads, 2 kv heads) and Qwen3.6-35B-A3B
    // (16 / 2): D 256, R 64, theta 1e7.
    out.push_back(run_case("A17B q (32 heads)", {T, 32, 256, 64, 1e7f}, kPositions, seed));
    out.push_back(run_case("A17B k (2 heads)", {T, 2, 256, 64, 1e7f}, kPositions, seed + 1));
    out.push_back(run_case("A3B q (16 heads)", {T, 16, 256, 64, 1e7f}, kPositions, seed + 2));
    out.push_back(run_case("A3B k (2 heads)", {T, 2, 256, 64, 1e7f}, kPositions, seed + 3));
    std::vector<int64_t> chunk(64);
    for (int64_t t = 0; t < 64; ++t) chunk[t] = 4000 + t;
    out.push_back(run_case("A17B q prefill 64 tokens at 4000", {64, 32, 256, 64, 1e7f}, chunk, seed + 4));
  }
  return out;
}

}  // namespace moe
