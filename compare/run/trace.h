#pragma once
// MOE_TRACE_TIMES=1: the host's wall time of each seed's case building (inputs and the f64 truth)
// and of each case's phases (layout and allocation, uploads, the device run, the decision) on
// stderr. Why: a seed record on the H100 costs ~50 ms a case whatever the number of worker
// processes (records/device-runs.md), ten times a lavapipe case here; this says which phase it is.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace moe::compare {

inline bool trace_times() {
  static const bool on = [] {
    const char* e = std::getenv("MOE_TRACE_TIMES");
    return e && *e && std::string(e) != "0";
  }();
  return on;
}

// Laps of one piece of work; prints "trace: WHAT: total ms (name ms, ...)" when destroyed, if on.
// `what` is a callable returning the label: it runs only when tracing is on, so the per-case path
// builds no string for nothing.
class PhaseClock {
 public:
  template <class Label>
  explicit PhaseClock(Label&& what) : on_(trace_times()), t0_(now()), last_(t0_) {
    if (on_) what_ = std::forward<Label>(what)();
  }
  PhaseClock(const PhaseClock&) = delete;
  PhaseClock& operator=(const PhaseClock&) = delete;
  void lap(const char* name) {
    if (!on_) return;
    const auto t = now();
    laps_.emplace_back(name, ms(last_, t));
    last_ = t;
  }
  void quiet() { quiet_ = true; }  // nothing to say (a skipped case)
  ~PhaseClock() { report(); }
  // Prints now (for a process about to leave with _exit), once.
  void report() {
    if (!on_ || quiet_) return;
    quiet_ = true;
    std::string text;
    for (const auto& [name, v] : laps_) text += (text.empty() ? "" : ", ") + std::string(name) + " " + fmt(v);
    std::fprintf(stderr, "trace: %s: %s ms (%s)\n", what_.c_str(), fmt(ms(t0_, now())).c_str(), text.c_str());
  }

 private:
  using Clock = std::chrono::steady_clock;
  static Clock::time_point now() { return Clock::now(); }
  static double ms(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }
  static std::string fmt(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.2f", v);
    return b;
  }
  bool on_;
  std::string what_;
  Clock::time_point t0_, last_;
  std::vector<std::pair<const char*, double>> laps_;
  bool quiet_ = false;
};

}  // namespace moe::compare
