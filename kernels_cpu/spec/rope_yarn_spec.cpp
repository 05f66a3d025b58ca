#include "spec/rope_yarn_spec.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

namespace moe {

namespace {

RopeYarnParams yarn(int64_t R, int64_t heads, bool interleaved = true, float theta = 1e4f, float factor = 40.0f,
                    int64_t original = 4096, float mscale = 1.0f, float mscale_all_dim = 1.0f) {
  RopeYarnParams p;
  p.rotary_dim = R, p.heads = heads, p.interleaved = interleaved, p.theta = theta, p.factor = factor;
  p.original_max_position = original, p.mscale = mscale, p.mscale_all_dim = mscale_all_dim;
  return p;
}

}  // namespace

std::vector<RopeYarnShape> rope_yarn_shapes(bool remainders, bool real) {
  std::vector<RopeYarnShape> out;
  const RotaryPositions decode{{0, 1, 4095, 65535, 163839}, 3}, one{{}, 1};
  const RotaryPositions table{{0, 1, 4095, 4096, 65535, 163839}};
  auto add = [&](std::string label, RopeYarnParams p, uint64_t offset, const RotaryPositions& pos) {
    p.tokens = pos.tokens();
    out.push_back({std::move(label), p, offset, pos});
  };
  if (remainders) {
    const std::pair<const char*, RopeYarnParams> drawn[] = {
        {"remainder R 2", yarn(2, 1)},
        {"remainder R 6 heads 3", yarn(6, 3)},
        {"remainder R 16 original 64", yarn(16, 3, true, 1e4f, 8.0f, 64)},
        {"remainder R 64 m != 1 half-split", yarn(64, 5, false, 1e4f, 40.0f, 4096, 1.0f, 0.8f)},
        {"remainder R 128 theta 1e6 mscale_all_dim absent", yarn(128, 2, true, 1e6f, 8.0f, 8192, 0.707f, 0.0f)},
        {"remainder R 32 factor 1", yarn(32, 2, true, 1e4f, 1.0f)},
        {"remainder R 258", yarn(258, 2)},
    };
    for (const auto& [label, p] : drawn) add(label, p, uint64_t(p.rotary_dim * 7 + p.heads), decode);
    add("remainder T 1 heads 129 R 16", yarn(16, 129, true, 1e4f, 40.0f, 64), 129, one);
    // More rows than one dispatch dimension holds (as in rope_shapes), in both pair layouts.
    add("remainder rows 65600 (T 1025 x heads 64) R 4", yarn(4, 64), 130, RotaryPositions{{}, 0, 1025});
    add("remainder rows 65600 (T 1025 x heads 64) R 4 half-split", yarn(4, 64, false), 131, RotaryPositions{{}, 0, 1025});
    // Exactly two slices of 32,768 rows: a slice stride one short leaves the last rows unwritten.
    add("remainder rows 65536 (T 1024 x heads 64) R 4", yarn(4, 64), 132, RotaryPositions{{}, 0, 1024});
    RopeYarnParams singular = yarn(64, 3);  // low == high == 0: the 0.001 guard
    singular.beta_fast = 1448.0f, singular.beta_slow = 724.0f;
    const std::pair<const char*, RopeYarnParams> fixed[] = {
        {"R", yarn(6, 3)},
        {"R", yarn(30, 3)},
        {"R", yarn(66, 3)},
        {"R", yarn(4098, 3)},
        {"half-split R", yarn(64, 3, false)},
        {"mscale branch R", yarn(64, 3, true, 1e4f, 40.0f, 4096, 0.707f, 0.0f)},  // m = 0.1 ln 40 + 1
        {"mscale ratio R", yarn(64, 3, true, 1e4f, 40.0f, 4096, 1.0f, 0.5f)},     // inexact in f32
        {"factor 1 R", yarn(64, 3, true, 1e4f, 1.0f)},
        {"theta 1e6 factor 4 R", yarn(128, 3, true, 1e6f, 4.0f, 8192)},
        {"singular ramp R", singular},
    };
    for (size_t k = 0; k < std::size(fixed); ++k)
      add(std::string("remainder ") + fixed[k].first + " " + std::to_string(fixed[k].second.rotary_dim),
          fixed[k].second, 17 * (k + 1), table);
  }
  if (real) {
    add("Cogito q_pe (128 heads)", yarn(64, 128), 0, decode);
    RotaryPositions k_pe = decode;  // q_pe's positions
    k_pe.seed_shift = -1;
    add("Cogito k_pe (1 head)", yarn(64, 1), 1, k_pe);
    add("Cogito decode T 1 q_pe", yarn(64, 128), 2, one);
    add("Cogito decode T 1 q_pe half-split (MFR pairing)", yarn(64, 128, false), 3, one);
    add("Cogito q_pe prefill 64", yarn(64, 128), 4, RotaryPositions{{}, 0, 64});
    add("Cogito q_pe half-split (MFR)", yarn(64, 128, false), 2, table);
    add("Cogito q_pe prefill 64 at 4064", yarn(64, 128), 3, RotaryPositions{{4064}, 0, 64});
    add("Cogito k_pe prefill 64 at 163776", yarn(64, 1), 4, RotaryPositions{{163776}, 0, 64});
  }
  return out;
}

RotaryInputs rope_yarn_inputs(const RopeYarnParams& p, uint64_t seed, const RotaryPositions& positions) {
  return rotary_inputs(positions, seed, p.heads * p.rotary_dim, 163840, 163840 - 63);
}

std::vector<double> rope_yarn_bound(const RopeYarnParams& p, std::span<const int64_t> positions,
                                    std::span<const float> x, const PrecisionModel& m) {
  const int64_t R = p.rotary_dim, half = R / 2;
  const double theta = double(p.theta), factor = double(p.factor), u = m.u;
  const double log2_theta = std::log2(theta), dlog2 = rotary_log2_err(theta, m);
  const YarnRange rg = rope_yarn_range(p);
  const double eps_w = m.division_rel + u * std::fabs(rg.high) / std::fabs(rg.high - rg.low);
  const double ms = std::max({double(p.mscale), double(p.mscale_all_dim), 1.0});
  const double dm = u + 2 * (9 * u + 0.1 * ms * m.log_abs) + 5 * u;
  std::vector<double> inv(static_cast<size_t>(half)), inv_rel(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    const double e = double(2 * i) / double(R);
    const double extra = std::pow(theta, -e), inter = extra / factor;
    // The extrapolated frequency directly (exp2) or in ggml's power form (theta_scale^i).
    const double eps_extra =
        std::max(rotary_exp2_rel(e, log2_theta, dlog2, m), rotary_power_form_rel(i, R, log2_theta, dlog2, m));
    const double eps_inter = eps_extra + m.division_rel + u;
    const double w_raw = (double(i) - rg.low) / (rg.high - rg.low), w = std::clamp(w_raw, 0.0, 1.0);
    const double dw = 1.01 * eps_w * std::min(std::fabs(w_raw), 1.01);
    const double dinv = 1.01 * (std::fabs(extra - inter) * dw + inter * w * (eps_inter + 3 * u) +
                                extra * (1 - w) * (eps_extra + 4 * u));
    inv[size_t(i)] = inter * w + extra * (1 - w);
    inv_rel[size_t(i)] = dinv / inv[size_t(i)] + u + rotary_truth_rel(theta);
  }
  return rotary_bound({p.tokens, p.heads, R, half, p.interleaved}, positions, x, inv, inv_rel,
                      rope_yarn_attention_factor<double>(p), 6 * u + dm, m);
}

std::vector<double> rope_yarn_f32_bound(const RopeYarnParams& p, std::span<const int64_t> positions,
                                        std::span<const float> x) {
  return rope_yarn_bound(p, positions, x, cpu_f32_model());
}

}  // namespace moe
