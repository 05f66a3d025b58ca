#include "compare/cases/bound_mode.h"

#include <atomic>
#include <string>

#include "compare/decide/precision.h"
#include "core/check.h"

namespace moe::compare {

namespace {
std::atomic<BoundMode> g_mode{BoundMode::Probabilistic};
}

BoundMode bound_mode() { return g_mode.load(); }
void set_bound_mode(BoundMode m) { g_mode.store(m); }

BoundMode parse_bound_mode(const std::string& name) {
  if (name == "probabilistic") return BoundMode::Probabilistic;
  if (name == "worst") return BoundMode::Worst;
  MOE_FAIL("--bounds '" << name << "': expected probabilistic or worst");
}

const char* bound_mode_name(BoundMode m) { return m == BoundMode::Worst ? "worst" : "probabilistic"; }

PrecisionModel device_model() {
  PrecisionModel m;
  m.sum = [](double n) { return sum_gamma(n); };
  m.exp_rel = [](double x) { return exp_rel(x); };
  m.division_rel = division_rel();
  m.quant_weight_rounded_once = false;
  return m;
}

}  // namespace moe::compare
