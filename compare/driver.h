// `moeoracle compare`: runs every kernel of a manifest (the bundled set by default) on a Vulkan
// device against the CPU ground truth, case by case, seed by seed, at every subgroup size the
// kernel and device allow, and reports (console, --json, --junit).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "compare/report.h"

namespace moe::compare {

struct CompareOptions {
  std::string kernels;        // manifest path; "" = the bundled kernels
  std::string ops;            // comma-separated; "" = every op the manifest has cases for
  uint64_t seed = 1;
  int seeds = 1;              // seeds seed .. seed + seeds - 1
  std::string shapes = "all"; // remainders | real | all, or one shape label
  std::string device;         // index or name substring; "" = first (discrete preferred)
  std::string shard;          // "I/N": run cases with index % N == I (also GTEST_SHARD_INDEX/TOTAL_SHARDS)
  uint32_t subgroup = 0;      // 0: every size; else only this one
  bool perf = false;          // print GB/s and GFLOP/s from GPU timestamps
  std::string json, junit;    // report files
  uint64_t timeout_ms = 20000;
  bool quiet = false;         // no header line (tests)
};

// 0 all passed (skips allowed), 1 a case failed. Prints the console report, writes --json/--junit.
int run_compare(const CompareOptions& opt);
// The cases' results without printing (tests, other tools).
std::vector<CaseResult> compare_cases(const CompareOptions& opt);

}  // namespace moe::compare
