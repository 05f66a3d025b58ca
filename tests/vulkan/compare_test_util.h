// Helpers shared by the compare tests of tests/vulkan: run a manifest's kernels, pick a kernel's
// cases, read a case's parameters and verdicts.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compare/run/driver.h"
#include "compare/vk/runner.h"

namespace moe::compare::test {

inline const std::string kData = std::string(MOE_SOURCE_DIR) + "/tests/vulkan/data/";

inline bool have_device() { return !vk::list_devices().empty(); }

// compare_cases over `ops` ("" = every op the manifest covers) and `shapes`, seeds seed..seed+seeds-1.
inline std::vector<CaseResult> run(const std::string& manifest, const std::string& ops, const std::string& shapes,
                                   int seeds, uint64_t seed = 1) {
  CompareOptions o;
  o.kernels = manifest, o.ops = ops, o.shapes = shapes, o.seeds = seeds, o.seed = seed, o.quiet = true;
  return compare_cases(o);
}

// A copy of `manifest` (JSON) holding only kernel `name` (and the other kernels of its sequence,
// if any), that kernel edited by `edit`, written next to it as <prefix>_<pid>.json: the path.
inline std::string manifest_variant(const std::string& manifest, const std::string& name,
                                    const std::function<void(nlohmann::json&)>& edit, const std::string& prefix) {
  std::ifstream f(manifest);
  nlohmann::json j = nlohmann::json::parse(f, nullptr, true, /*ignore_comments=*/true);
  std::set<std::string> names = {name};
  for (const auto& seq : j.value("sequences", nlohmann::json::array()))
    for (const auto& k : seq["kernels"])
      if (k == name) names.insert(seq["kernels"].begin(), seq["kernels"].end());
  nlohmann::json keep = nlohmann::json::array();
  for (auto& k : j["kernels"])
    if (names.count(k["name"])) keep.push_back(k);
  j["kernels"] = keep;
  if (names.size() == 1) j.erase("sequences");
  for (auto& k : j["kernels"])
    if (k["name"] == name) edit(k);
  const std::string path = std::filesystem::path(manifest).parent_path().string() + "/" + prefix + "_" +
                           std::to_string(::getpid()) + ".json";
  std::ofstream(path) << j.dump(1);
  return path;
}

// run() over a variant's remainders, one seed; the variant file is removed.
inline std::vector<CaseResult> run_variant(const std::string& path, const std::string& ops) {
  std::vector<CaseResult> rs = run(path, ops, "remainders", 1);
  std::remove(path.c_str());
  return rs;
}

// The cases a kernel ran (skipped ones, outside its limits, left out).
inline std::vector<const CaseResult*> of_kernel(const std::vector<CaseResult>& rs, const std::string& kernel) {
  std::vector<const CaseResult*> out;
  for (const CaseResult& r : rs)
    if (r.kernel == kernel && r.status() != CaseResult::Status::Skip) out.push_back(&r);
  return out;
}

// A parameter of the case ("tokens=3 rows=33 ..." -> 3).
inline int64_t param(const CaseResult& r, const std::string& name) {
  std::istringstream in(r.params);
  std::string kv;
  while (in >> kv)
    if (kv.rfind(name + "=", 0) == 0) return std::stoll(kv.substr(name.size() + 1));
  ADD_FAILURE() << "no parameter " << name << " in '" << r.params << "'";
  return -1;
}

// The subgroup size a case ran at (0 in the result: the device's default).
inline uint32_t subgroup_of(const CaseResult& r) {
  return r.subgroup ? r.subgroup : vk::Context("").info().subgroup_size;
}

// The bundled kernels of `ops` over 3 seeds of the remainder shapes and 1 of the real shapes:
// no case may fail, every plan in `plans` must pass at every subgroup size the device offers,
// and at least `min_passed` cases must pass.
inline void expect_bundled_pass(const std::string& ops, std::initializer_list<const char*> plans, int min_passed) {
  std::vector<CaseResult> rs = run("", ops, "remainders", 3);
  const std::vector<CaseResult> real = run("", ops, "real", 1);
  rs.insert(rs.end(), real.begin(), real.end());
  std::map<std::string, std::set<uint32_t>> seen;  // plan -> subgroup sizes that passed
  int passed = 0;
  for (const CaseResult& r : rs) {
    EXPECT_NE(r.status(), CaseResult::Status::Fail) << case_line(r) << " " << r.error;
    if (r.status() == CaseResult::Status::Pass) ++passed, seen[r.kernel].insert(r.subgroup);
  }
  const size_t sizes = std::max<size_t>(1, vk::Context("").info().subgroup_sizes().size());
  for (const char* plan : plans)
    EXPECT_EQ(seen[plan].size(), sizes) << plan << " did not pass at every subgroup size";
  EXPECT_GE(passed, min_passed);
}

// The verdict of output `name` (nullptr if the case has none).
inline const Verdict* verdict(const CaseResult& r, const std::string& name) {
  for (const Verdict& v : r.outputs)
    if (v.output == name) return &v;
  return nullptr;
}

}  // namespace moe::compare::test
