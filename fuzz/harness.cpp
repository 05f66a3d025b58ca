// The libFuzzer harness of every format: compiled once per format with MOE_FUZZ_FORMAT set to its
// name (fuzz/CMakeLists.txt), it feeds each input to that format's target (fuzz/targets.h). A bad
// input must end in moe::Error; anything else is a finding.
#include <cstdio>
#include <cstdlib>

#include "core/check.h"
#include "fuzz/targets.h"

namespace {
moe::fuzz::Target g_target = nullptr;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // The target's fixtures are made here, so their seconds are not charged to the first input.
  moe::fuzz::prepare(MOE_FUZZ_FORMAT);
  g_target = moe::fuzz::find_target(MOE_FUZZ_FORMAT).run;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    g_target(data, size);
  } catch (const moe::Error& e) {
    // Rejected with a message: the expected outcome for a bad input. MOE_FUZZ_VERBOSE=1 shows it.
    static const bool verbose = std::getenv("MOE_FUZZ_VERBOSE") != nullptr;
    if (verbose) std::fprintf(stderr, "moe::Error: %s\n", e.what());
  }
  return 0;
}
