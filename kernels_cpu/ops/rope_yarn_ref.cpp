#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>

#include "core/math.h"
#include "ops/rope.h"
#include "ops/rope_yarn.h"

namespace moe {

void rope_yarn_validate(const RopeYarnParams& p, std::span<const int64_t> positions, std::span<const float> x,
                        std::span<const float> y) {
  MOE_CHECK(p.tokens >= 0 && p.heads >= 0,
            "rope_yarn: tokens=" << p.tokens << " heads=" << p.heads << ", expected tokens >= 0, heads >= 0");
  // (float)(2i) and (float)R must be exact, as the f32 order assumes.
  MOE_CHECK(p.rotary_dim > 0 && p.rotary_dim % 2 == 0 && p.rotary_dim <= (int64_t(1) << 24),
            "rope_yarn: rotary_dim=" << p.rotary_dim << ", expected even and in [2, 2^24]");
  // ln(theta) divides the correction dimension: theta = 1 has none, theta < 1 reverses the ramp.
  MOE_CHECK(std::isfinite(p.theta) && p.theta > 1.0f, "rope_yarn: theta=" << p.theta << ", expected finite and > 1");
  MOE_CHECK(std::isfinite(p.factor) && p.factor > 0.0f,
            "rope_yarn: factor=" << p.factor << ", expected finite and > 0");
  MOE_CHECK(p.original_max_position > 0,
            "rope_yarn: original_max_position=" << p.original_max_position << ", expected > 0");
  // HF replaces a zero or absent beta by its default (32 / 1); a caller passes the value it means.
  MOE_CHECK(std::isfinite(p.beta_fast) && p.beta_fast > 0.0f && std::isfinite(p.beta_slow) && p.beta_slow > 0.0f,
            "rope_yarn: beta_fast=" << p.beta_fast << " beta_slow=" << p.beta_slow << ", expected finite and > 0");
  // Non-negative mscales keep both get_mscale values >= 1, so the ratio never divides by ~0.
  MOE_CHECK(std::isfinite(p.mscale) && p.mscale >= 0.0f && std::isfinite(p.mscale_all_dim) && p.mscale_all_dim >= 0.0f,
            "rope_yarn: mscale=" << p.mscale << " mscale_all_dim=" << p.mscale_all_dim
                                 << ", expected finite and >= 0 (0 = absent from the config)");
  rotary_validate_io("rope_yarn", p.tokens, p.heads, p.rotary_dim, "rotary_dim", positions, x, y);
}

// HF computes the correction range in Python floats (double): both tiers use it, since after
// floor/ceil it is a pair of small integers that an f32 evaluation (MFR) only changes when a
// correction dimension lies within an f32 rounding of an integer.
YarnRange rope_yarn_range(const RopeYarnParams& p) {
  const double R = double(p.rotary_dim), L = double(p.original_max_position), theta = double(p.theta);
  // find_correction_dim, in HF's order of operations.
  auto corr = [&](double rotations) {
    return (R * std::log(L / (rotations * 2 * std::numbers::pi))) / (2 * std::log(theta));
  };
  YarnRange r;
  r.low = std::max(std::floor(corr(double(p.beta_fast))), 0.0) + 0.0;  // + 0.0: never -0
  r.high = std::min(std::ceil(corr(double(p.beta_slow))), R - 1) + 0.0;
  if (r.low == r.high) r.high += 0.001;  // linear_ramp_factor: "Prevent singularity"
  return r;
}

template <class Acc>
std::vector<Acc> rope_yarn_inv_freq(const RopeYarnParams& p) {
  const int64_t R = p.rotary_dim, half = R / 2;
  const YarnRange r = rope_yarn_range(p);
  const Acc low = Acc(r.low), span = Acc(r.high) - Acc(r.low);
  std::vector<Acc> inv(half);
  for (int64_t i = 0; i < half; ++i) {
    // Acc = float: powf, 1.0f / pf, 1.0f / (factor * pf) (HF's interpolation form, not MFR's
    // powf(factor * theta, e)), the ramp in f32, MFR's blend inter * w + extra * (1 - w).
    const Acc e = Acc(2 * i) / Acc(R);
    const Acc pf = std::pow(Acc(p.theta), e);
    const Acc extra = Acc(1) / pf;
    const Acc inter = Acc(1) / (Acc(p.factor) * pf);
    const Acc w = std::clamp((Acc(i) - low) / span, Acc(0), Acc(1));
    inv[i] = inter * w + extra * (Acc(1) - w);
  }
  return inv;
}

template <class Acc>
Acc rope_yarn_attention_factor(const RopeYarnParams& p) {
  const Acc s = Acc(p.factor);
  auto get_mscale = [&](Acc m) { return s <= Acc(1) ? Acc(1) : Acc(0.1) * m * std::log(s) + Acc(1); };
  // HF: `if mscale and mscale_all_dim` -> the ratio, else get_mscale(factor) with mscale 1.
  if (p.mscale != 0.0f && p.mscale_all_dim != 0.0f) return get_mscale(Acc(p.mscale)) / get_mscale(Acc(p.mscale_all_dim));
  return get_mscale(Acc(1));
}

template <class Acc>
void rope_yarn_ref(const RopeYarnParams& p, std::span<const int64_t> positions, std::span<const float> x,
                   std::span<float> y) {
  rope_yarn_validate(p, positions, x, y);
  const int64_t R = p.rotary_dim, half = R / 2;
  const std::vector<Acc> inv = rope_yarn_inv_freq<Acc>(p);
  const Acc m = rope_yarn_attention_factor<Acc>(p);
  std::vector<Acc> c(half), s(half);
  std::vector<float> row(R);  // the head's input, so that y may be x (interleaved reads cross halves)
  for (int64_t t = 0; t < p.tokens; ++t) {
    const Acc pos = Acc(positions[t]);  // (float)pos in the f32 tier, exact below 2^24
    for (int64_t i = 0; i < half; ++i) {
      // MFR apply_rotary_emb_yarn: cosf(angle) * mscale, sinf(angle) * mscale.
      const Acc angle = pos * inv[i];
      c[i] = std::cos(angle) * m, s[i] = std::sin(angle) * m;
    }
    for (int64_t h = 0; h < p.heads; ++h) {
      const int64_t base = (t * p.heads + h) * R;
      std::copy(x.begin() + base, x.begin() + base + R, row.begin());
      for (int64_t i = 0; i < half; ++i) {
        int64_t a = 0, b = 0;
        rope_yarn_pair(p, i, a, b);
        const Acc x0 = Acc(row[a]), x1 = Acc(row[b]);
        y[base + i] = float(x0 * c[i] - x1 * s[i]);
        y[base + i + half] = float(x0 * s[i] + x1 * c[i]);
      }
    }
  }
}

template std::vector<float> rope_yarn_inv_freq<float>(const RopeYarnParams&);
template std::vector<double> rope_yarn_inv_freq<double>(const RopeYarnParams&);
template float rope_yarn_attention_factor<float>(const RopeYarnParams&);
template double rope_yarn_attention_factor<double>(const RopeYarnParams&);
template void rope_yarn_ref<float>(const RopeYarnParams&, std::span<const int64_t>, std::span<const float>,
                                   std::span<float>);
template void rope_yarn_ref<double>(const RopeYarnParams&, std::span<const int64_t>, std::span<const float>,
                                    std::span<float>);

}  // namespace moe
