#include "spec/rope_spec.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>

namespace moe {

std::vector<RopeShape> rope_shapes(bool remainders, bool real) {
  std::vector<RopeShape> out;
  const std::vector<int64_t> fixed{0, 1, 4095, 65535, 1000000};
  const RotaryPositions decode{fixed, 3}, one{{}, 1}, table{fixed}, prefill{{}, 0, 64};
  auto add = [&](std::string label, int64_t heads, int64_t D, int64_t R, uint64_t offset, const RotaryPositions& pos,
                 float theta = 1e7f) {
    out.push_back({std::move(label), RopeParams{pos.tokens(), heads, D, R, theta}, offset, pos});
  };
  if (remainders) {
    for (const auto& [D, R, theta] : {std::tuple<int64_t, int64_t, float>{2, 2, 1e4f}, {31, 2, 1e7f}, {33, 30, 1e4f},
                                      {67, 66, 1e7f}, {64, 64, 1e6f}, {4099, 64, 1e7f}, {300, 260, 1e7f}})
      add("remainder D " + std::to_string(D) + " R " + std::to_string(R), 3, D, R, uint64_t(D + R), decode, theta);
    add("remainder T 1 D 512 R 128", 3, 512, 128, 512, one);
    add("remainder T 1 D 512 R 512", 2, 512, 512, 513, one);
    add("remainder T 1 heads 129 D 256 R 64", 129, 256, 64, 514, one);
    // More rows (tokens x heads) than one dispatch dimension holds (65,535 workgroups is the usual
    // maxComputeWorkGroupCount): engines that give each row a workgroup split them over y or z.
    add("remainder rows 65600 (T 1025 x heads 64) D 4 R 4", 64, 4, 4, 515, RotaryPositions{{}, 0, 1025});
    add("remainder rows 65536 (T 1024 x heads 64) D 4 R 4", 64, 4, 4, 516, RotaryPositions{{}, 0, 1024});
  }
  if (real) {
    add("A17B q (32 heads)", 32, 256, 64, 0, decode);
    add("A17B/A3B k (2 heads)", 2, 256, 64, 1, decode);
    add("A3B q (16 heads)", 16, 256, 64, 2, decode);
    add("A17B q prefill 64", 32, 256, 64, 3, prefill);
    add("A17B decode T 1 q (32 heads)", 32, 256, 64, 4, one);
    add("A3B decode T 1 q (16 heads)", 16, 256, 64, 5, one);
    add("A17B/A3B decode T 1 k (2 heads)", 2, 256, 64, 6, one);
    add("A17B k (2 heads)", 2, 256, 64, 1, table);
    add("A3B k (2 heads)", 2, 256, 64, 3, table);
    add("A17B q prefill 64 tokens at 4000", 32, 256, 64, 4, RotaryPositions{{4000}, 0, 64});
  }
  return out;
}

RotaryInputs rope_inputs(const RopeParams& p, uint64_t seed, const RotaryPositions& positions) {
  return rotary_inputs(positions, seed, p.heads * p.head_dim, 1000001, 1000000 - 63);
}

std::vector<double> rope_bound(const RopeParams& p, std::span<const int64_t> positions, std::span<const float> x,
                               const PrecisionModel& m) {
  const int64_t R = p.rotary_dim, half = R / 2;
  const double theta = double(p.theta), log2_theta = std::log2(theta), dlog2 = rotary_log2_err(theta, m);
  std::vector<double> inv(static_cast<size_t>(half)), inv_rel(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    const double e = double(2 * i) / double(R);
    const double power_form_rel = rotary_power_form_rel(i, R, log2_theta, dlog2, m);
    const double direct = rotary_exp2_rel(e, log2_theta, dlog2, m) + m.division_rel;
    inv[size_t(i)] = std::pow(theta, -e);
    inv_rel[size_t(i)] = std::max(direct, power_form_rel) + m.u + rotary_truth_rel(theta);
  }
  return rotary_bound({p.tokens, p.heads, p.head_dim, half, false}, positions, x, inv, inv_rel, 1.0, 4 * m.u, m);
}

}  // namespace moe
