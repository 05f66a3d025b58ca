// Per-device calibration of the transcendental functions' error budgets (decide/precision.h):
// each function runs on a dense sweep of its range on the device, against the f64 value, and the
// largest error seen (times kCalibrationSafety, floored at one ULP, capped at the Vulkan rule)
// becomes its budget. `moeoracle calibrate` prints it; compare, mutate and bisect measure it at
// start (--precision measured, the default) unless told to use the rules (--precision spec).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "compare/decide/precision.h"

namespace moe::vk {
class Context;
}

namespace moe::compare {

// What the sweep saw, before the safety factor (for the record) and the budgets derived from it.
struct Calibration {
  Precision measured;  // the largest errors seen (exp: a and b of a + b|x|)
  Precision budget;    // what the bounds use
  int64_t points = 0;  // per function
  std::string device;
};
Calibration calibrate(vk::Context& ctx);
// The same in a forked child process that opens its own device (a parent that must not open
// one: the isolated compare's and mutate's). Throws moe::Error with the child's message.
Calibration calibrate_in_child(const std::string& device);

nlohmann::json precision_to_json(const Precision& p);
Precision precision_from_json(const nlohmann::json& j);
// "measured" (calibrate on `device`) or "spec"; sets the process-wide precision and returns a
// line saying which budgets are in use.
std::string apply_precision(const std::string& mode, const std::string& device, bool in_child);
// `moeoracle calibrate`: the measured errors and the budgets, against the rules; exit 0.
int calibrate_command(const std::string& device);

}  // namespace moe::compare
