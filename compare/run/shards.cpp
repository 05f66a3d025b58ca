#include "compare/run/shards.h"

#include <fstream>
#include <map>

#include "compare/cases/bound_mode.h"
#include "compare/cases/cases.h"
#include "compare/decide/precision.h"
#include "compare/report/result_codec.h"
#include "compare/run/calibrate.h"
#include "core/check.h"
#include "core/strings.h"
#include "oracle/atomic_file.h"

namespace moe::compare {

using nlohmann::json;

namespace {

// What the shards of one run share. The budgets' "source" names the device they were measured
// on, so shards calibrated on different devices do not pass for one run.
json run_identity(const CompareOptions& opt) {
  return {{"kernels", opt.kernels}, {"ops", opt.ops},         {"seed", opt.seed},
          {"seeds", opt.seeds},     {"shapes", opt.shapes},   {"subgroup", opt.subgroup},
          {"bounds", bound_mode_name(bound_mode())},          {"precision", precision_to_json(precision())}};
}

// The ops in the order one run reports them (merge_results): --ops as given, else the case list's.
std::vector<std::string> op_order(const json& run) {
  const std::string ops = run.at("ops").get<std::string>();
  return ops.empty() ? case_ops() : split_commas(ops);
}

}  // namespace

void save_results_file(const std::string& path, const CompareOptions& opt, const std::vector<CaseResult>& results) {
  const Shard sh = parse_shard(opt);
  json arr = json::array();
  for (const CaseResult& r : results) arr.push_back(result_to_json(r));
  const json j = {{"moeoracle_results", 1},
                  {"run", run_identity(opt)},
                  {"shard", {{"index", sh.index}, {"count", sh.count}}},
                  {"results", std::move(arr)}};
  write_file_atomic(path, "the results file", j.dump() + "\n");
}

ResultsFile load_results_file(const std::string& path) {
  std::ifstream in(path);
  MOE_CHECK(in, "merge: cannot read " << path);
  ResultsFile f;
  f.path = path;
  try {
    const json j = json::parse(in);
    MOE_CHECK(j.is_object() && j.value("moeoracle_results", 0) == 1,
              "not a results file of `compare --results` (no \"moeoracle_results\": 1)");
    f.run = j.at("run");
    f.shard_index = j.at("shard").at("index").get<int64_t>(), f.shard_count = j.at("shard").at("count").get<int64_t>();
    MOE_CHECK(f.shard_count > 0 && f.shard_index >= 0 && f.shard_index < f.shard_count,
              "shard " << f.shard_index << "/" << f.shard_count << ", expected I/N with 0 <= I < N");
    for (const json& r : j.at("results")) f.results.push_back(result_from_json(r));
  } catch (const std::exception& e) {  // moe::Error and nlohmann's parse and type errors
    MOE_FAIL("merge: " << path << ": " << e.what());
  }
  return f;
}

std::vector<CaseResult> merge_shards(const std::vector<ResultsFile>& files) {
  MOE_CHECK(!files.empty(), "merge: no results files");
  const ResultsFile& first = files.front();
  std::map<int64_t, std::string> seen;  // shard index -> file
  std::vector<CaseResult> all;
  for (const ResultsFile& f : files) {
    for (const auto& [key, value] : first.run.items())
      MOE_CHECK(f.run.contains(key) && f.run.at(key) == value,
                "merge: " << f.path << " is not a shard of the run of " << first.path << ": its \"" << key << "\" is "
                          << (f.run.contains(key) ? f.run.at(key).dump() : "missing") << ", there " << value.dump());
    MOE_CHECK(f.shard_count == first.shard_count, "merge: " << f.path << " is shard " << f.shard_index << "/"
                                                             << f.shard_count << ", " << first.path << " of "
                                                             << first.shard_count << " shards");
    const auto [it, fresh] = seen.emplace(f.shard_index, f.path);
    MOE_CHECK(fresh, "merge: " << f.path << " and " << it->second << " are both shard " << f.shard_index << "/"
                               << f.shard_count);
    for (const CaseResult& r : f.results) {
      // A plan that no case reached (case_pos < 0: the device cannot run it) is reported by every
      // shard; one run reports it once.
      if (r.case_pos < 0 && f.shard_index != 0) continue;
      all.push_back(r);
    }
  }
  std::string missing;
  for (int64_t i = 0; i < first.shard_count; ++i)
    if (!seen.count(i)) missing += (missing.empty() ? "" : ", ") + std::to_string(i);
  MOE_CHECK(missing.empty(), "merge: the run has " << first.shard_count << " shards; missing: " << missing);
  return merge_results(std::move(all), op_order(first.run));
}

}  // namespace moe::compare
