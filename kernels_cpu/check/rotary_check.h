// The three-way check of a rotary op (rope, rope_yarn): each shape of its spec runs the three
// tiers on the spec's positions and x, and y is compared against the spec's bound under
// cpu_f32_model() (spec/rotary_bound.h).
#pragma once
#include <string>
#include <vector>

#include "core/params.h"
#include "spec/rotary_bound.h"
#include "spec/shape.h"

namespace moe {

template <class P, class Inputs, class Tier, class Bound>
std::vector<CheckResult> rotary_check(const char* op, const std::vector<SpecShape<P, RotaryPositions>>& shapes,
                                      uint64_t seed, Inputs inputs, Tier truth, Tier f32, Tier fast, Bound bound) {
  std::vector<CheckResult> out;
  for (const auto& s : shapes) {
    const RotaryInputs in = inputs(s.p, seed + s.seed_offset, s.variant);
    std::vector<float> t(in.x.size()), r32(in.x.size()), f(in.x.size());
    CheckResult res{op, s.label, params_to_string(s.p), seed + s.seed_offset};
    res.truth_seconds = time_call([&] { truth(s.p, in.positions, in.x, t); });
    res.ref32.seconds = time_call([&] { f32(s.p, in.positions, in.x, r32); });
    res.fast.seconds = time_call([&] { fast(s.p, in.positions, in.x, f); });
    const std::vector<double> b = bound(s.p, in.positions, in.x, cpu_f32_model());
    res.ref32.add("y", t, r32, b);
    res.fast.add("y", t, f, b);
    out.push_back(std::move(res));
  }
  return out;
}

}  // namespace moe
