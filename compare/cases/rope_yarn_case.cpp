#include <algorithm>
#include <cmath>

#include "compare/cases/case_util.h"
#include "compare/cases/instances.h"
#include "compare/decide/precision.h"
#include "core/rng.h"
#include "ops/rope_yarn.h"

namespace moe::compare {
namespace {

// Per-element bound for a kernel that forms the YaRN angle in f32 under the Vulkan precision
// rules (or the device's calibrated budgets, decide/precision.h), against the f64 truth
// (rope_yarn_ref<double>: every formula of kernels_cpu/ops/rope_yarn.h in f64, y rounded to f32).
// First order in u = 2^-24; rope_case.cpp's reasoning for the plain RoPE angle, plus the YaRN
// blend and the attention factor m.
// Frequencies, pair i, e = 2i/R:
//   extra = theta^-e = exp2(-t), t = e log2(theta): as rope (e to 6u, log2 to 3 ULP or 2^-21
//     absolute, the product u): |dt| <= e dlog2 + 7u |t|; eps_extra = exp_rel(|t| + dt) + ln2 dt.
//   inter = extra / factor (2.5 ULP), or 1 / (factor pf): eps_inter = eps_extra + div + u.
//   w = clamp((i - low) / (high - low), 0, 1) from the host's low and high as f32 push
//     constants: integers (exact) except HF's singularity guard high = low + 0.001 (rounded:
//     |dh| <= u |high|); the subtraction is exact (Sterbenz), the division 2.5 ULP:
//     eps_w = div + u |high| / |high - low|; clamp is 1-Lipschitz and flat past 1, so
//     |dw| <= 1.01 eps_w min(|w_raw|, 1.01).
//   inv = inter w + extra (1 - w): all terms >= 0; (1 - w), both products and the sum round:
//     |dinv| <= |extra - inter| |dw| + inter w (eps_inter + 3u) + extra (1 - w) (eps_extra + 4u),
//     times 1.01 for the second-order products of these errors.
// Angle a = float(pos) inv (+ u; float(pos) exact below 2^24, else 2u), reduced to [-pi, pi]
//   (2u |a| + 16u, as rope), the truth's own f64 angle ((|ln theta| + 4) 2^-53 |a|):
//   da = |a| (dinv / inv + u + d_pos + 2u + (|ln theta| + 4) 2^-53) + 16u.
// Rotation of the pair (x1, x2), |r| = hypot: by a + da instead of a moves each component by
//   <= da |r|; cos and sin 2^-11 absolute each (the rule; calibrated budgets are ~1e-7); times m
//   (the push constant rounded: u; a kernel computing m itself from ln(factor): both get_mscale
//   values to 9u + 0.1 mscale * log_abs and the division 5u, budgeted as dm); c = m cos, s = m sin
//   round (u each), the two products and the sum 2u (|x1 c| + |x2 s|) <= 3u m |r|; the truth's
//   rounding to f32 u m |r|:
//   |y - y_truth| <= m (|r| (da + 6u + dm) + sincos_abs (|x1| + |x2|)) + the smallest normal.
// At Cogito's last position (163839), pair 0 (inv = 1): da ~ 0.03 rad under the rules; the
// high pairs (interpolated, a ~ 163839 * 7.7e-6 ~ 1.3 rad) are checked to ~1e-6 relative.
std::vector<double> rope_yarn_bound(const RopeYarnParams& p, std::span<const int64_t> positions,
                                    std::span<const float> x) {
  const int64_t R = p.rotary_dim, half = R / 2;
  const double theta = double(p.theta), factor = double(p.factor), u = kU32;
  const double log2_theta = std::log2(theta), ln_theta = std::fabs(std::log(theta));
  const double dlog2 = theta > 2.0 ? log_ulp_rel() * std::fabs(log2_theta) : log_abs();
  const YarnRange rg = rope_yarn_range(p);
  const double span = std::fabs(rg.high - rg.low);
  const double eps_w = division_rel() + u * std::fabs(rg.high) / span;
  const double m = rope_yarn_attention_factor<double>(p);
  const double ms = std::max({double(p.mscale), double(p.mscale_all_dim), 1.0});
  const double dm = u + 2 * (9 * u + 0.1 * ms * log_abs()) + 5 * u;
  std::vector<double> bound(x.size(), 0.0);
  std::vector<double> da_rel(static_cast<size_t>(half)), inv(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    const double e = double(2 * i) / double(R);
    const double tt = e * std::fabs(log2_theta), dt = e * dlog2 + 7 * u * tt;
    const double extra = std::pow(theta, -e), inter = extra / factor;
    const double eps_extra = exp_rel(tt + dt) + std::log(2.0) * dt;
    const double eps_inter = eps_extra + division_rel() + u;
    const double w_raw = (double(i) - rg.low) / (rg.high - rg.low), w = std::clamp(w_raw, 0.0, 1.0);
    const double dw = 1.01 * eps_w * std::min(std::fabs(w_raw), 1.01);
    const double dinv = 1.01 * (std::fabs(extra - inter) * dw + inter * w * (eps_inter + 3 * u) +
                                extra * (1 - w) * (eps_extra + 4 * u));
    inv[size_t(i)] = inter * w + extra * (1 - w);
    da_rel[size_t(i)] = dinv / inv[size_t(i)] + 3 * u + (ln_theta + 4) * 0x1.0p-53;
  }
  for (int64_t t = 0; t < p.tokens; ++t) {
    const double pos = double(positions[size_t(t)]);
    const double d_pos = pos >= 0x1.0p24 ? 2 * u : 0.0;
    for (int64_t i = 0; i < half; ++i) {
      const double a = pos * inv[size_t(i)];
      const double da = a * (da_rel[size_t(i)] + d_pos) + 16 * u;
      int64_t ia = 0, ib = 0;
      rope_yarn_pair(p, i, ia, ib);
      for (int64_t h = 0; h < p.heads; ++h) {
        const size_t row = size_t((t * p.heads + h) * R);
        const double x1 = x[row + size_t(ia)], x2 = x[row + size_t(ib)];
        const double r = std::hypot(x1, x2);
        bound[row + size_t(i)] = bound[row + size_t(i + half)] =
            m * (r * (da + 6 * u + dm) + sincos_abs() * (std::fabs(x1) + std::fabs(x2))) + kMinNormal32;
      }
    }
  }
  return bound;
}

}  // namespace

OpCase rope_yarn_instance(const std::string& label, uint64_t seed, const RopeYarnParams& p,
                          std::span<const int64_t> positions, std::span<const float> x) {
  OpCase c = new_case("rope_yarn", label, seed);
  set_vars(c, p);
  // What the host computes once per model and hands the kernel (rope_yarn.comp's push constants).
  const YarnRange rg = rope_yarn_range(p);
  c.vars["ramp_low"] = rg.low, c.vars["ramp_high"] = rg.high;
  c.vars["attention_factor"] = rope_yarn_attention_factor<double>(p);
  const int64_t n = p.tokens * p.heads * p.rotary_dim;
  std::vector<float> y(static_cast<size_t>(n));
  rope_yarn_ref<double>(p, positions, x, y);
  set_rotary_tensors(c, positions, x, y, rope_yarn_bound(p, positions, x));
  return c;
}

namespace {

// x: q_pe / k_pe straight from q_b_proj / kv_a_proj (no norm on the rope part): activations.
OpCase rope_yarn_case(const std::string& label, const RopeYarnParams& p, const std::vector<int64_t>& positions,
                      uint64_t seed) {
  Rng rng(seed);
  const std::vector<float> x = rng.fork(1).activations(p.tokens * p.heads * p.rotary_dim);
  return rope_yarn_instance(label, seed, p, positions, x);
}

// Cogito-V2 / DeepSeek-V3: theta 1e4, factor 40, original context 4096, beta 32 / 1, R 64.
RopeYarnParams cogito(int64_t tokens, int64_t heads, bool interleaved) {
  RopeYarnParams p;
  p.tokens = tokens, p.heads = heads, p.interleaved = interleaved;
  return p;
}

// The positions every decode-like case visits: the start, the first step, the original context's
// end, the edge of 16 bits and the last of DeepSeek-V3's 163840, plus three drawn from the seed.
std::vector<int64_t> decode_positions(uint64_t seed) {
  std::vector<int64_t> pos{0, 1, 4095, 65535, 163839};
  Rng rng = Rng(seed).fork(7);
  for (int k = 0; k < 3; ++k) pos.push_back(rng.below(163840));
  return pos;
}

std::vector<int64_t> one_position(uint64_t seed) { return {int64_t(Rng(seed).fork(7).below(163840))}; }

struct Shape {
  const char* label;
  int64_t R, heads;
  float theta, factor;
  int64_t original;
  float beta_fast, beta_slow, mscale, mscale_all_dim;
  bool interleaved;
};

}  // namespace

std::vector<OpCase> rope_yarn_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  if (rem) {
    // A lone pair; R not a power of two; the ramp's three regions at a small R; m != 1 (mscale_all_dim
    // 0.8) on the half-split layout; an absent mscale_all_dim (m = get_mscale(factor, 1)) at
    // theta 1e6 and R 128; factor 1 (no interpolation, m = 1); 129 pairs (more than two workgroups
    // of 64 lanes: lanes take a second and a third pair); 129 heads at one token.
    const Shape shapes[] = {
        {"remainder R 2", 2, 1, 1e4f, 40.0f, 4096, 32.0f, 1.0f, 1.0f, 1.0f, true},
        {"remainder R 6 heads 3", 6, 3, 1e4f, 40.0f, 4096, 32.0f, 1.0f, 1.0f, 1.0f, true},
        {"remainder R 16 original 64", 16, 3, 1e4f, 8.0f, 64, 32.0f, 1.0f, 1.0f, 1.0f, true},
        {"remainder R 64 m != 1 half-split", 64, 5, 1e4f, 40.0f, 4096, 32.0f, 1.0f, 1.0f, 0.8f, false},
        {"remainder R 128 theta 1e6 mscale_all_dim absent", 128, 2, 1e6f, 8.0f, 8192, 32.0f, 1.0f, 0.707f, 0.0f, true},
        {"remainder R 32 factor 1", 32, 2, 1e4f, 1.0f, 4096, 32.0f, 1.0f, 1.0f, 1.0f, true},
        {"remainder R 258", 258, 2, 1e4f, 40.0f, 4096, 32.0f, 1.0f, 1.0f, 1.0f, true},
    };
    for (const Shape& sh : shapes) {
      const uint64_t s = seed + uint64_t(sh.R * 7 + sh.heads);
      const std::vector<int64_t> pos = decode_positions(s);
      RopeYarnParams p;
      p.tokens = int64_t(pos.size()), p.heads = sh.heads, p.rotary_dim = sh.R, p.theta = sh.theta;
      p.factor = sh.factor, p.original_max_position = sh.original, p.beta_fast = sh.beta_fast;
      p.beta_slow = sh.beta_slow, p.mscale = sh.mscale, p.mscale_all_dim = sh.mscale_all_dim;
      p.interleaved = sh.interleaved;
      out.push_back(rope_yarn_case(sh.label, p, pos, s));
    }
    RopeYarnParams p = cogito(1, 129, true);
    p.rotary_dim = 16, p.original_max_position = 64;
    out.push_back(rope_yarn_case("remainder T 1 heads 129 R 16", p, one_position(seed + 129), seed + 129));
  }
  if (real) {
    // Cogito-V2 / DeepSeek-V3: q_pe of 128 heads and the shared k_pe, HF's interleaved pairs;
    // q_pe on MFR's half-split layout (its kernel's pairing, docs/ops/verification.md "MFR YaRN pairing").
    const std::vector<int64_t> pos = decode_positions(seed);
    out.push_back(rope_yarn_case("Cogito q_pe (128 heads)", cogito(int64_t(pos.size()), 128, true), pos, seed));
    out.push_back(rope_yarn_case("Cogito k_pe (1 head)", cogito(int64_t(pos.size()), 1, true), pos, seed + 1));
    out.push_back(rope_yarn_case("Cogito decode T 1 q_pe", cogito(1, 128, true), one_position(seed + 2), seed + 2));
    out.push_back(rope_yarn_case("Cogito decode T 1 q_pe half-split (MFR pairing)", cogito(1, 128, false),
                                 one_position(seed + 3), seed + 3));
    // A prefill chunk of 64 consecutive positions from a start drawn from the seed.
    const int64_t start = Rng(seed + 4).fork(7).below(163840 - 63);
    std::vector<int64_t> chunk(64);
    for (int64_t t = 0; t < 64; ++t) chunk[size_t(t)] = start + t;
    out.push_back(rope_yarn_case("Cogito q_pe prefill 64", cogito(64, 128, true), chunk, seed + 4));
  }
  return out;
}

}  // namespace moe::compare
