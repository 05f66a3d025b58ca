// The three-way check of a rotary op (rope, rope_yarn): each shape of its spec runs the three
// tiers on the spec's positions and x, and y is compared against the spec's bound under
// cpu_f32_model() (spec/rotary_bound.h).
#pragma once
#include <string>
#include <vector>

#include "check/three_tiers.h"
#include "spec/rotary_bound.h"
#include "spec/shape.h"

namespace moe {

template <class P, class Inputs, class Tier, class Bound>
std::vector<CheckResult> rotary_check(const char* op, const std::vector<SpecShape<P, RotaryPositions>>& shapes,
                                      uint64_t seed, Inputs inputs, Tier truth, Tier f32, Tier fast, Bound bound) {
  return check_shapes(op, shapes, seed, [&](const auto& s, CheckResult& res) {
    const RotaryInputs in = inputs(s.p, res.seed, s.variant);
    const TierOutputs<> y = run_tiers(res, in.x.size(), truth, f32, fast, s.p, in.positions, in.x);
    judge(res, "y", y, bound(s.p, in.positions, in.x, cpu_f32_model()));
  });
}

}  // namespace moe
