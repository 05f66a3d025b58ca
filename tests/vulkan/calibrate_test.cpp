// Per-device calibration of the transcendental budgets (compare/run/calibrate.h) on the default
// Vulkan device: every budget lies between its floor and the Vulkan rule (past the rule only
// where the device itself breaks it), covers what was measured, and the forked measurement gives
// the parent the same numbers as an in-process one.
#include <gtest/gtest.h>

#include "compare/run/calibrate.h"
#include "compare/vk/runner.h"

namespace moe::compare {
namespace {

TEST(calibrate, BudgetsBetweenTheirFloorAndTheRule) {
  if (vk::list_devices().empty()) GTEST_SKIP() << "no Vulkan device";
  vk::Context ctx("");
  const Calibration c = calibrate(ctx);
  const Precision rule = spec_precision(), &m = c.measured, &b = c.budget;
  EXPECT_EQ(c.points, 1 << 20);
  struct Row {
    const char* name;
    double measured, budget, rule, floor;
  };
  const Row rows[] = {{"exp_a", m.exp_a, b.exp_a, rule.exp_a, 1.0},
                      {"exp_b", m.exp_b, b.exp_b, rule.exp_b, 0.0},
                      {"log_ulp", m.log_ulp, b.log_ulp, rule.log_ulp, 1.0},
                      {"log_abs", m.log_abs, b.log_abs, rule.log_abs, kU32},
                      {"sincos_abs", m.sincos_abs, b.sincos_abs, rule.sincos_abs, kU32},
                      {"inversesqrt_ulp", m.inversesqrt_ulp, b.inversesqrt_ulp, rule.inversesqrt_ulp, 1.0},
                      {"division_ulp", m.division_ulp, b.division_ulp, rule.division_ulp, 1.0}};
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    EXPECT_GE(r.budget, r.floor);
    // What was seen is covered: twice over where the rule allows, with the margin where the
    // device breaks the rule.
    EXPECT_GE(r.budget, std::min(r.measured * kCalibrationSafety, std::max(r.rule, r.measured * kOutOfRuleMargin)));
    if (r.measured <= r.rule) EXPECT_LE(r.budget, r.rule);
    else EXPECT_EQ(r.budget, r.measured * kOutOfRuleMargin);
  }
  // No real driver needs the rules' sin/cos allowance: a measured budget is far below it.
  EXPECT_LT(b.sincos_abs, rule.sincos_abs / 100) << c.device;
}

TEST(calibrate, InAChildTheSameNumbers) {
  // The child first: a process that forks after its own Vulkan driver started threads (lavapipe
  // does) leaves the child with a driver whose threads are gone. The CLI forks before it touches
  // Vulkan for the same reason.
  Calibration child;
  try {
    child = calibrate_in_child("");
  } catch (const std::exception& e) {
    if (vk::list_devices().empty()) GTEST_SKIP() << "no Vulkan device";
    throw;
  }
  vk::Context ctx("");
  const Calibration here = calibrate(ctx);
  EXPECT_EQ(precision_to_json(here.budget), precision_to_json(child.budget));
  EXPECT_EQ(here.device, child.device);
}

}  // namespace
}  // namespace moe::compare
