// Sharded compare runs put back together (compare/run/shards.h): the merged results equal one
// unsharded run's, shard by case and shard by seed; files that are not the N shards of one run
// are refused with the file and the field named.
#include <fstream>

#include "compare/report/result_codec.h"
#include "compare/run/driver.h"
#include "compare/run/shards.h"
#include "compare/vk/runner.h"
#include "test_util.h"

namespace moe::compare {
namespace {

bool have_device() { return !vk::list_devices().empty(); }

CompareOptions options(int seeds, const std::string& shard) {
  CompareOptions o;
  o.ops = "rmsnorm,router_topk,delta_net", o.shapes = "remainders", o.seeds = seeds, o.shard = shard, o.quiet = true;
  return o;
}

// A result as JSON without its GPU timings (they differ from run to run).
nlohmann::json untimed(const CaseResult& r) {
  nlohmann::json j = result_to_json(r);
  j.erase("gpu_ms"), j.erase("timing");
  return j;
}

void expect_same(const std::vector<CaseResult>& merged, const std::vector<CaseResult>& one) {
  ASSERT_EQ(merged.size(), one.size());
  for (size_t i = 0; i < one.size(); ++i) EXPECT_EQ(untimed(merged[i]), untimed(one[i])) << "result " << i;
}

// The shards of a run with `seeds` seeds in `count` parts, saved and read back.
std::vector<ResultsFile> shard_files(const test::Scratch& s, int seeds, int count) {
  std::vector<ResultsFile> files;
  for (int i = count; i-- > 0;) {  // in reverse: the merge must not depend on the files' order
    const CompareOptions o = options(seeds, std::to_string(i) + "/" + std::to_string(count));
    const std::string path = (s.dir / ("shard" + std::to_string(i) + ".json")).string();
    save_results_file(path, o, compare_cases(o));
    files.push_back(load_results_file(path));
  }
  return files;
}

TEST(shards, ByCaseMergeEqualsOneRun) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  test::Scratch s("shards_case");
  std::filesystem::create_directories(s.dir);
  expect_same(merge_shards(shard_files(s, 1, 3)), compare_cases(options(1, "")));
}

TEST(shards, BySeedMergeEqualsOneRun) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  test::Scratch s("shards_seed");
  std::filesystem::create_directories(s.dir);
  expect_same(merge_shards(shard_files(s, 2, 2)), compare_cases(options(2, "")));
}

ResultsFile part(const std::string& path, int64_t index, int64_t count, int seeds = 1) {
  ResultsFile f;
  f.path = path, f.shard_index = index, f.shard_count = count;
  f.run = {{"ops", "rmsnorm"}, {"seeds", seeds}, {"seed", 1}};
  return f;
}

TEST(shards, PartsOfDifferentRunsAreRefused) {
  test::expect_error([&] { merge_shards({part("a.json", 0, 2), part("b.json", 1, 2, 2)}); },
                     "merge: b.json is not a shard of the run of a.json: its \"seeds\" is 2, there 1");
  test::expect_error([&] { merge_shards({part("a.json", 0, 2), part("b.json", 1, 3)}); },
                     "merge: b.json is shard 1/3, a.json of 2 shards");
  test::expect_error([&] { merge_shards({part("a.json", 1, 2), part("b.json", 1, 2)}); },
                     "merge: b.json and a.json are both shard 1/2");
  test::expect_error([&] { merge_shards({part("a.json", 0, 3), part("b.json", 2, 3)}); },
                     "merge: the run has 3 shards; missing: 1");
}

TEST(shards, ABadFileIsNamed) {
  test::Scratch s("shards_bad");
  std::filesystem::create_directories(s.dir);
  const std::string path = (s.dir / "report.json").string();
  std::ofstream(path) << R"({"cases": [], "summary": {}})";
  test::expect_error([&] { load_results_file(path); }, "merge: " + path + ": not a results file of `compare --results`");
  std::ofstream(path) << R"({"moeoracle_results": 1, "run": {}, "shard": {"index": 2, "count": 2}, "results": []})";
  test::expect_error([&] { load_results_file(path); }, "shard 2/2, expected I/N with 0 <= I < N");
  test::expect_error([&] { load_results_file(path + ".missing"); }, "merge: cannot read " + path + ".missing");
}

}  // namespace
}  // namespace moe::compare
