// libFuzzer harness for moe::fuzz::expr (fuzz/targets.h): a bad input must end in moe::Error.
#include <cstdio>
#include <cstdlib>

#include "core/check.h"
#include "fuzz/targets.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  moe::fuzz::prepare("expr");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    moe::fuzz::expr(data, size);
  } catch (const moe::Error& e) {
    // Rejected with a message: the expected outcome for a bad input. MOE_FUZZ_VERBOSE=1 shows it.
    static const bool verbose = std::getenv("MOE_FUZZ_VERBOSE") != nullptr;
    if (verbose) std::fprintf(stderr, "moe::Error: %s\n", e.what());
  }
  return 0;
}
