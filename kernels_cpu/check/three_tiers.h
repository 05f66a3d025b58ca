// What every op's three-way check (kernels_cpu/check/<op>_check.cpp) does around its spec: one
// result per shape, inputs drawn with the shape's own seed (res.seed), the f64 truth, the f32 tier
// and the fast tier run (each timed) into outputs of their own, and both f32 tiers compared with
// the truth under the spec's bound under cpu_f32_model().
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/check_util.h"
#include "core/params.h"

namespace moe {

// Whether the CPU check runs a shape: a spec whose shapes carry `variant.cpu` lists some for the
// GPU alone (too slow for the scalar tiers, or judged only there).
template <class Shape>
bool cpu_judges(const Shape& s) {
  if constexpr (requires { s.variant.cpu; }) return s.variant.cpu;
  else return true;
}

// `run(shape, res)` for each shape the CPU judges, with res naming the op, the shape, its params
// and its seed (the run's seed plus the shape's offset).
template <class Shape, class Run>
std::vector<CheckResult> check_shapes(const char* op, const std::vector<Shape>& shapes, uint64_t seed, Run run) {
  std::vector<CheckResult> out;
  for (const Shape& s : shapes) {
    if (!cpu_judges(s)) continue;
    CheckResult res{op, s.label, params_to_string(s.p), seed + s.seed_offset};
    run(s, res);
    out.push_back(std::move(res));
  }
  return out;
}

// The outputs of an op with one output (f32 values, or i32 indices), per tier; the truth's values
// rounded once to f32.
template <class T = float>
struct TierOutputs {
  std::vector<T> truth, r32, fast;
};

// Runs the tiers of an op with one output of n elements: tier(in..., out), each timed.
template <class T = float, class F64, class F32, class Fast, class... In>
TierOutputs<T> run_tiers(CheckResult& res, size_t n, F64 truth, F32 r32, Fast fast, const In&... in) {
  TierOutputs<T> o{std::vector<T>(n), std::vector<T>(n), std::vector<T>(n)};
  res.truth_seconds = time_call([&] { truth(in..., std::span<T>(o.truth)); });
  res.ref32.seconds = time_call([&] { r32(in..., std::span<T>(o.r32)); });
  res.fast.seconds = time_call([&] { fast(in..., std::span<T>(o.fast)); });
  return o;
}

// Compares both f32 tiers' output `name` with the truth: per element within `bound` (one bound
// for every element, e.g. 0 for data movement, or one per element).
template <class Bound>
void judge(CheckResult& res, const char* name, const TierOutputs<float>& o, const Bound& bound) {
  res.ref32.add(name, o.truth, o.r32, bound);
  res.fast.add(name, o.truth, o.fast, bound);
}

// Indices: both tiers' equal to the truth's.
inline void judge_exact(CheckResult& res, const char* name, const TierOutputs<int32_t>& o) {
  res.ref32.add_exact(name, o.truth, o.r32);
  res.fast.add_exact(name, o.truth, o.fast);
}

}  // namespace moe
