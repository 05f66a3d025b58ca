// What the rotary ops' GPU cases (compare/cases/{rope,rope_yarn}_case.cpp) share: a case's truth,
// bound and tensors, and the cases of every shape of the op's spec (spec/rotary_bound.h).
#pragma once
#include <span>
#include <vector>

#include "compare/cases/bound_mode.h"
#include "compare/cases/case_util.h"
#include "spec/rotary_bound.h"

namespace moe::compare {

// y's truth (the op's f64 tier) and its bound (the spec's, under device_model()), with the
// positions and x (set_rotary_tensors).
template <class P, class Truth, class Bound>
void set_rotary_case(OpCase& c, const P& p, std::span<const int64_t> positions, std::span<const float> x, Truth truth,
                     Bound bound) {
  std::vector<float> y(x.size());
  truth(p, positions, x, y);
  set_rotary_tensors(c, positions, x, y, bound(p, positions, x, device_model()));
}

template <class Shape, class Inputs, class Instance>
std::vector<OpCase> rotary_cases(const std::vector<Shape>& shapes, uint64_t seed, Inputs inputs, Instance instance) {
  std::vector<OpCase> out;
  for (const Shape& s : shapes) {
    const RotaryInputs in = inputs(s.p, seed + s.seed_offset, s.variant);
    out.push_back(instance(s.label, seed + s.seed_offset, s.p, in.positions, in.x));
  }
  return out;
}

}  // namespace moe::compare
