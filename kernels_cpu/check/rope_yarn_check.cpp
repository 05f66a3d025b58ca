#include <algorithm>
#include <cmath>
#include <string>

#include "core/params.h"
#include "core/rng.h"
#include "ops/rope_yarn.h"

namespace moe {

// Per-element bound for an f32 evaluation (the f32 and fast tiers; HF's float32 path in the
// golden test) against the truth, first order in u.
//
// Frequencies. With e = 2i/R (exact in the truth) the f32 evaluation computes
//   e_f   = fl((float)(2i) / (float)R)   exact when R is a power of two; d_e = |e_f - e| otherwise
//   pf    = powf(theta, e_f)             within 1 ulp (2u), and theta^e_f = theta^e (1 + d_e ln theta)
//   extra = 1 / pf                       + u:  relative error <= d_e ln theta + 3u
//   inter = 1 / (factor pf)              + 2u: relative error <= d_e ln theta + 4u
//   w     = fl((i - low) / (high - low)) i - low and high - low are exact (small integers): + u w;
//                                        w is exactly 0 or 1 off the ramp (and in the guard case)
//   1 - w                                absolute error <= u w + u (1 - w) = u
//   inv   = inter w + extra (1 - w)      two products and a sum: + u on each term, + u on inv
// so |inv_f - inv| <= inv (d_e ln theta + 6u) + (2u inter + 1.01u extra) on the ramp (0 < w < 1),
// where the weight errors (u w on inter's, 1.01u on extra's; HF's 1 - (1 - w) has 2u on inter's)
// are taken at HF's larger values so that one bound serves both orders; off the ramp inv_f is
// inter_f or extra_f exactly (x * 1, x * 0 and + 0 are exact). The truth's own inverse frequency
// (f64 pow, reciprocals, blend) is within (inv + inter + extra)(ln theta + 16) 2^-53.
// Attention factor. m_f = m exactly when factor <= 1 (both 1) and when mscale == mscale_all_dim
// (the same f32 operations on the same operands give g / g = 1). Otherwise get_mscale in f32 is
// within 6u of g (0.1f is within u of 0.1, logf 2u, two products 2u, the sum u; 0.1 m ln s <= g)
// and the ratio within 13u: d_m = 13u |m|.
// Angle. a_f = fl(pos_f inv_f), pos_f = (float)pos exact below 2^24 (relative d_pos above):
//   |a_f - a| <= pos d_inv + u (a + pos d_inv) + a d_pos + a 2^-52 (the truth's own product).
// Rotation. Rotating a pair r = (x0, x1) by a_f instead of a and scaling by m moves it by exactly
// 2 |m sin((a_f - a)/2)| |r| <= |m| |a_f - a| |r| in each component. c_f = fl(cosf(a_f) m_f):
// cosf/sinf within 1 ulp (2u) and the product u, so 3u relative to |m cos a_f| plus d_m; the two
// products and the sum (or one FMA) add 2u (|x0 c| + |x1 s|); with |x0 cos| + |x1 sin| <= |r|
// (Cauchy-Schwarz) that is 5u |m| |r| + d_m |r|, and the truth's rounding to f32 adds u |y| <= u |m| |r|.
// Hence |y - y_true| <= |m| |r| (|a_f - a| + 6u) + d_m |r| + the smallest normal (subnormal results).
std::vector<double> rope_yarn_f32_bound(const RopeYarnParams& p, std::span<const int64_t> positions,
                                        std::span<const float> x) {
  const int64_t R = p.rotary_dim, half = R / 2;
  const double log_theta = std::log(double(p.theta)), factor = double(p.factor);
  const std::vector<double> inv = rope_yarn_inv_freq<double>(p);
  const YarnRange range = rope_yarn_range(p);
  const double m = std::fabs(rope_yarn_attention_factor<double>(p));
  const bool m_exact = p.factor <= 1.0f || (p.mscale == p.mscale_all_dim && p.mscale != 0.0f);
  const double d_m = m_exact ? 0.0 : 13 * kU32 * m;
  std::vector<double> d_inv(half);
  for (int64_t i = 0; i < half; ++i) {
    const double e = double(2 * i) / double(R), d_e = std::fabs(double(float(2 * i) / float(R)) - e);
    const double extra = std::pow(double(p.theta), -e), inter = extra / factor;
    const double w = (double(i) - range.low) / (range.high - range.low);
    const bool on_ramp = w > 0.0 && w < 1.0;
    d_inv[i] = inv[i] * (d_e * log_theta + 6 * kU32) + (on_ramp ? 2 * kU32 * inter + 1.01 * kU32 * extra : 0.0) +
               (inv[i] + inter + extra) * (log_theta + 16) * 0x1.0p-53;
  }
  std::vector<double> bound(x.size(), 0.0);
  for (int64_t t = 0; t < p.tokens; ++t) {
    const double pos = double(positions[t]);
    const double d_pos = pos > 0 ? std::fabs(double(float(positions[t])) - pos) / pos : 0.0;
    for (int64_t i = 0; i < half; ++i) {
      const double a = pos * inv[i];
      const double da = pos * d_inv[i] + kU32 * (a + pos * d_inv[i]) + a * d_pos + a * 0x1.0p-52;
      for (int64_t h = 0; h < p.heads; ++h) {
        const int64_t base = (t * p.heads + h) * R;
        int64_t ia = 0, ib = 0;
        rope_yarn_pair(p, i, ia, ib);
        const double r = std::hypot(double(x[base + ia]), double(x[base + ib]));
        bound[base + i] = bound[base + i + half] = m * r * (da + 6 * kU32) + d_m * r + kMinNormal32;
      }
    }
  }
  return bound;
}

namespace {

// The start, the first step, the end of the pretraining context (4095, 4096: YaRN's
// original_max_position), the edge of 16 bits and Cogito's last position (max_position_embeddings
// 163840), where the f32 angle is off by ~0.02 rad.
const std::vector<int64_t> kPositions{0, 1, 4095, 4096, 65535, 163839};

CheckResult run_case(const std::string& label, const RopeYarnParams& p, const std::vector<int64_t>& positions,
                     uint64_t seed) {
  Rng rng(seed);
  // q_pe / k_pe come out of q_b_proj / kv_a_proj_with_mqa unnormalised: RMS ~1 with outliers.
  const std::vector<float> x = rng.fork(1).activations(p.tokens * p.heads * p.rotary_dim);
  std::vector<float> truth(x.size()), r32(x.size()), fast(x.size());

  CheckResult res{"rope_yarn", label, params_to_string(p), seed};
  res.truth_seconds = time_call([&] { rope_yarn_ref<double>(p, positions, x, truth); });
  res.ref32.seconds = time_call([&] { rope_yarn_ref<float>(p, positions, x, r32); });
  res.fast.seconds = time_call([&] { rope_yarn_fast(p, positions, x, fast); });

  const std::vector<double> bound = rope_yarn_f32_bound(p, positions, x);
  res.ref32.add("y", truth, r32, bound);
  res.fast.add("y", truth, fast, bound);
  return res;
}

// Cogito-V2 / DeepSeek-V3: R 64, theta 1e4, YaRN factor 40 over 4096, beta 32 / 1, mscale 1 / 1.
RopeYarnParams cogito(int64_t tokens, int64_t heads, bool interleaved = true) {
  RopeYarnParams p;
  p.tokens = tokens, p.heads = heads, p.interleaved = interleaved;
  return p;
}

void add_remainders(std::vector<CheckResult>& out, uint64_t seed) {
  const int64_t T = int64_t(kPositions.size());
  struct Shape {
    const char* label;
    RopeYarnParams p;
  };
  std::vector<Shape> shapes;
  // Sizes: a lone pair, 2i/R inexact in f32 (R 6, 30, 66), an odd half (vector tail), a long head.
  for (const int64_t R : {2, 6, 30, 66, 4098}) {
    RopeYarnParams p = cogito(T, 3);
    p.rotary_dim = R;
    shapes.push_back({"R", p});
  }
  RopeYarnParams p = cogito(T, 3, false);  // MFR's half-split pairing
  shapes.push_back({"half-split R", p});
  p = cogito(T, 3);  // HF's other branch: mscale without mscale_all_dim -> m = 0.1 ln 40 + 1
  p.mscale = 0.707f, p.mscale_all_dim = 0.0f;
  shapes.push_back({"mscale branch R", p});
  p = cogito(T, 3);  // a ratio != 1, computed inexactly in f32
  p.mscale = 1.0f, p.mscale_all_dim = 0.5f;
  shapes.push_back({"mscale ratio R", p});
  p = cogito(T, 3);  // no scaling: inter = extra, m = 1 (plain RoPE on interleaved pairs)
  p.factor = 1.0f;
  shapes.push_back({"factor 1 R", p});
  p = cogito(T, 3);  // another regime: theta 1e6, factor 4 over 8192, R 128
  p.rotary_dim = 128, p.theta = 1e6f, p.factor = 4.0f, p.original_max_position = 8192;
  shapes.push_back({"theta 1e6 factor 4 R", p});
  p = cogito(T, 3);  // low == high == 0: the 0.001 singularity guard (rope_yarn_test hand-computes it)
  p.beta_fast = 1448.0f, p.beta_slow = 724.0f;
  shapes.push_back({"singular ramp R", p});
  for (size_t k = 0; k < shapes.size(); ++k) {
    const std::string label = std::string("remainder ") + shapes[k].label + " " + std::to_string(shapes[k].p.rotary_dim);
    out.push_back(run_case(label, shapes[k].p, kPositions, seed + 17 * k));
  }
}

}  // namespace

std::vector<CheckResult> rope_yarn_check(uint64_t seed, CheckScope scope) {
  std::vector<CheckResult> out;
  const int64_t T = int64_t(kPositions.size());
  if (scope_has_remainders(scope)) add_remainders(out, seed);
  if (scope_has_real(scope)) {
    // Cogito-V2-671B / DeepSeek-V3 MLA: q_pe of 128 heads, the shared k_pe, each 64 wide.
    out.push_back(run_case("Cogito q_pe (128 heads)", cogito(T, 128), kPositions, seed));
    out.push_back(run_case("Cogito k_pe (1 head)", cogito(T, 1), kPositions, seed + 1));
    out.push_back(run_case("Cogito q_pe half-split (MFR)", cogito(T, 128, false), kPositions, seed + 2));
    // Prefill chunks (threaded in the fast tier): across the 4096 boundary, and at the context's end.
    std::vector<int64_t> chunk(64), tail(64);
    for (int64_t t = 0; t < 64; ++t) chunk[t] = 4064 + t, tail[t] = 163776 + t;
    out.push_back(run_case("Cogito q_pe prefill 64 at 4064", cogito(64, 128), chunk, seed + 3));
    out.push_back(run_case("Cogito k_pe prefill 64 at 163776", cogito(64, 1), tail, seed + 4));
  }
  return out;
}

}  // namespace moe
