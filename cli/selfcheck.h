#pragma once
#include <cstdint>
#include <string>

namespace moe {

struct SelfcheckOptions {
  uint64_t seed = 1;
  std::string ops;      // comma-separated stems; empty = all
  bool remainders = false;  // also the remainder shapes (the tests always run them)
};

// Runs each op's three-way check and prints one table row per case. Returns the exit code:
// 0 all pass, 1 a tier is outside its bound.
int run_selfcheck(const SelfcheckOptions& opt);

}  // namespace moe
