#include "spec/glu_spec.h"

#include <cmath>
#include <numbers>
#include <string>

#include "core/check_util.h"
#include "core/rng.h"

namespace moe {

GluInputs glu_inputs(const GluParams& p, uint64_t seed, const GluVariant& v) {
  const int64_t n = p.rows * p.n;
  Rng rng(seed);
  GluInputs in;
  in.gate = v.wide ? rng.fork(1).uniform_vec(n, -100.0f, 100.0f) : rng.fork(1).activations(n);
  in.up = rng.fork(2).normal_vec(n, 1.0);
  return in;
}

std::vector<SpecShape<GluParams, GluVariant>> glu_shapes(bool remainders, bool real) {
  std::vector<SpecShape<GluParams, GluVariant>> out;
  const char* names[3] = {"silu", "gelu tanh", "gelu erf"};
  if (remainders)
    for (int64_t act = 0; act < 3; ++act) {
      for (int64_t n : {1, 3, 31, 33, 67, 257, 4099})
        out.push_back({"remainder n " + std::to_string(n) + " " + names[act], GluParams{3, n, act},
                       uint64_t(n + 10000 * act)});
      out.push_back({std::string("wide gates |g| <= 100 ") + names[act], GluParams{4, 1031, act},
                     uint64_t(1031 + 10000 * act), GluVariant{true}});
    }
  // Just past 2^18 elements: dispatches that split the elements over y and z (512 x 512 per z
  // slice, as ggml's) cross a slice.
  if (remainders) out.push_back({"remainder 5 x 52,433 (past 262,144 elements) silu", GluParams{5, 52433, 0}, 52433});
  if (real) {
    auto add = [&](std::string label, int64_t rows, int64_t n, int64_t act, uint64_t offset) {
      out.push_back({std::move(label), GluParams{rows, n, act}, offset});
    };
    add("A17B expert decode", 1, 1024, 0, 0);
    add("A17B shared expert prefill 64", 64, 1024, 0, 1);
    add("A3B expert decode", 1, 512, 0, 2);
    add("DeepSeek-V3 expert decode", 1, 2048, 0, 3);
    add("DeepSeek-V3 dense decode", 1, 18432, 0, 4);
    add("DeepSeek-V3 dense prefill 16", 16, 18432, 0, 5);
    add("GELU tanh width 2048 prefill 16", 16, 2048, 1, 6);
    add("GELU erf width 2048 prefill 16", 16, 2048, 2, 7);
  }
  return out;
}

namespace {

// exp's relative error at x, total (1) where its result leaves f32's normal range (glu_spec.h).
double exp_err(double x, const PrecisionModel& m) { return std::fabs(x) > 87 ? 1.0 : m.exp_rel(x); }

// B = 1 + tanh(v) of the tanh GELU at g: its absolute error (glu_spec.h).
double gelu_tanh_dB(double g, const PrecisionModel& m) {
  const double u = m.u;
  const double v = std::sqrt(2.0 / std::numbers::pi) * (g + 0.044715 * g * g * g);
  const double c = std::cosh(v), sech2 = std::isfinite(c) ? 1.0 / (c * c) : 0.0;
  const double B = 2.0 / (1.0 + std::exp(-2.0 * v)), q = 2.0 - B;
  const double by_exp = exp_err(2 * v, m) * sech2 / 2 + q * (u + m.division_rel) + u * B;
  const double by_tanh = m.tanh_abs(v) + u * B;
  return std::max(by_exp, by_tanh) + sech2 * 8 * u * std::fabs(v);
}

// B = 1 + erf(x) of the erf GELU at g: its absolute error (glu_spec.h).
double gelu_erf_dB(double g, const PrecisionModel& m) {
  const double x = g / std::numbers::sqrt2, B = std::erfc(-x);
  return m.erf_abs(x) + m.u * B + 2 / std::sqrt(std::numbers::pi) * std::exp(-x * x) * 2 * m.u * std::fabs(x);
}

}  // namespace

std::vector<double> glu_bound(const GluParams& p, std::span<const float> gate, std::span<const float> up,
                              const PrecisionModel& m) {
  const GluAct act = GluAct(p.act);
  std::vector<double> bound(gate.size());
  for (size_t i = 0; i < gate.size(); ++i) {
    const double g = gate[i], a = std::fabs(double(up[i]));
    double b = 0;
    if (act == GluAct::Silu) {
      const double E = std::exp(-g), y = std::fabs(g / (1 + E)) * a;
      const double seen = std::isfinite(E) ? E / (1 + E) : 1.0;
      b = (exp_err(-g, m) * seen + 3 * m.u + m.division_rel + kU32) * y;
    } else {
      const double B = act == GluAct::GeluTanh ? 2.0 / (1.0 + std::exp(-2.0 * std::sqrt(2.0 / std::numbers::pi) *
                                                                          (g + 0.044715 * g * g * g)))
                                               : std::erfc(-g / std::numbers::sqrt2);
      const double dB = act == GluAct::GeluTanh ? gelu_tanh_dB(g, m) : gelu_erf_dB(g, m);
      const double h = 0.5 * std::fabs(g) * a;
      b = h * dB + (2 * m.u + kU32) * h * B;
    }
    bound[i] = b + kMinNormal32 * (1 + a);
  }
  return bound;
}

}  // namespace moe
