// A sharded compare run put back together. Each shard (`compare --shard I/N --results FILE`)
// writes every result losslessly (report/result_codec.h) with what the run was: the manifest,
// the ops, the seeds, the shapes, the subgroup, the bound mode and the transcendental budgets,
// and its shard. `moeoracle merge FILE...` checks that the files are the N different shards of
// one such run and orders their results as one process would have (merge_results): the same
// console lines, reports and exit code as the unsharded run.
//
// Format: JSON {"moeoracle_results": 1, "run": {...}, "shard": {"index": I, "count": N},
// "results": [result_to_json...]}.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compare/report/report.h"
#include "compare/run/plan.h"

namespace moe::compare {

struct ResultsFile {
  std::string path;
  nlohmann::json run;  // what must be equal across the shards of one run
  int64_t shard_index = 0, shard_count = 1;
  std::vector<CaseResult> results;
};

// Writes atomically; throws moe::Error naming the path.
void save_results_file(const std::string& path, const CompareOptions& opt, const std::vector<CaseResult>& results);
// Reads and checks the format; a bad file is a moe::Error naming it and what is wrong.
ResultsFile load_results_file(const std::string& path);
// The results of one run from its N shard files, in one run's order. Throws moe::Error (naming
// the files and the field) when they are not the N different shards of one run.
std::vector<CaseResult> merge_shards(const std::vector<ResultsFile>& files);

}  // namespace moe::compare
