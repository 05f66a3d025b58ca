// `moeoracle compare`: runs every kernel of a manifest (the bundled set by default) on a Vulkan
// device against the CPU ground truth, case by case, seed by seed, at every subgroup size the
// kernel and device allow, and reports (console, --json, --junit).
#pragma once
#include <vector>

#include "compare/run/plan.h"

namespace moe::compare {

// 0 all passed (skips allowed), 1 a case failed. Prints the console report, writes --json/--junit.
int run_compare(const CompareOptions& opt);
// `moeoracle merge`: the shards' results files (run/shards.h) as one run, reported to the console
// and to `reports`' --json/--junit/--html; the exit code of that one run.
int run_merge(const std::vector<std::string>& files, const CompareOptions& reports);
// The cases' results without printing (tests, other tools): in this process, or with
// opt.isolate every plan in a worker process (isolate.h).
std::vector<CaseResult> compare_cases(const CompareOptions& opt);

}  // namespace moe::compare
