// Highway's target bookkeeping behind core/simd.h. Compiled with the fast tier's flags, so
// HWY_TARGETS here is the set the fast kernels were compiled for.
#include "core/simd.h"

#include <hwy/highway.h>
#include <hwy/targets.h>

#include <atomic>
#include <sstream>

#include "core/check.h"

namespace moe {

namespace {

int64_t pinned = 0;  // 0: none (the best supported)
// The target simd_target() names, 0 until first asked: Highway's answer costs a CPUID, which traps
// to the hypervisor in a VM (tens of microseconds), and the fast kernels ask on every call.
std::atomic<int64_t> current{0};

std::string joined(const std::vector<std::string>& v) {
  std::ostringstream os;
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  return os.str();
}

}  // namespace

std::string simd_target() {
  int64_t t = current.load(std::memory_order_relaxed);
  if (t == 0) {
    const std::vector<int64_t> all = hwy::SupportedAndGeneratedTargets();  // the pinned one alone, if any
    if (all.empty()) return "none";
    current.store(t = all.front(), std::memory_order_relaxed);
  }
  return hwy::TargetName(t);
}

std::vector<std::string> simd_targets() {
  std::vector<std::string> out;
  hwy::SetSupportedTargetsForTest(0);  // the CPU's own set, not a pinned one
  for (int64_t t : hwy::SupportedAndGeneratedTargets()) out.push_back(hwy::TargetName(t));
  if (pinned) hwy::SetSupportedTargetsForTest(pinned);
  return out;
}

void simd_pin(const std::string& name) {
  current.store(0, std::memory_order_relaxed);
  if (name.empty()) {
    pinned = 0;
    hwy::SetSupportedTargetsForTest(0);
    return;
  }
  hwy::SetSupportedTargetsForTest(0);
  for (int64_t t : hwy::SupportedAndGeneratedTargets())
    if (name == hwy::TargetName(t)) {
      pinned = t;
      hwy::SetSupportedTargetsForTest(t);
      return;
    }
  if (pinned) hwy::SetSupportedTargetsForTest(pinned);
  MOE_FAIL("simd target '" << name << "' is not one this binary and CPU offer: " << joined(simd_targets()));
}

}  // namespace moe
