// Highway's target bookkeeping behind core/simd.h. Compiled with the fast tier's flags, so
// HWY_TARGETS here is the set the fast kernels were compiled for.
#include "core/simd.h"

#include <hwy/highway.h>
#include <hwy/targets.h>

#include <sstream>

#include "core/check.h"

namespace moe {

namespace {

int64_t pinned = 0;  // 0: none (the best supported)

std::string joined(const std::vector<std::string>& v) {
  std::ostringstream os;
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  return os.str();
}

}  // namespace

std::string simd_target() {
  const std::vector<int64_t> t = hwy::SupportedAndGeneratedTargets();  // the pinned one alone, if any
  return t.empty() ? "none" : hwy::TargetName(t.front());
}

std::vector<std::string> simd_targets() {
  std::vector<std::string> out;
  hwy::SetSupportedTargetsForTest(0);  // the CPU's own set, not a pinned one
  for (int64_t t : hwy::SupportedAndGeneratedTargets()) out.push_back(hwy::TargetName(t));
  if (pinned) hwy::SetSupportedTargetsForTest(pinned);
  return out;
}

void simd_pin(const std::string& name) {
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
