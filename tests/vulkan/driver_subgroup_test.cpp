// "subgroup_sizes": "driver", a manifest's default (docs/manifests.md "Subgroup size"): the
// pipeline is made without a required subgroup size, so a fixed 512-invocation workgroup (as
// engines write them) runs on lavapipe, where pinned at size 8 it exceeds 32 subgroups; each
// case runs once, reported "sg=driver", with subgroup_size the device's default.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "vulkan/compare_test_util.h"

namespace moe::compare {
namespace {

using test::have_device, test::kData;

// driver_subgroup.json's kernel with `edit` applied, written to a scratch folder.
std::string variant(const std::function<void(nlohmann::json&)>& edit, const std::string& name) {
  static moe::test::Scratch dir("driver_subgroup");
  std::filesystem::create_directories(dir.dir);
  std::ifstream f(kData + "driver_subgroup.json");
  nlohmann::json j = nlohmann::json::parse(f);
  auto& k = j["kernels"][0];
  k["glsl"] = kData + k["glsl"].get<std::string>();
  edit(k);
  const std::string path = (dir.dir / (name + ".json")).string();
  std::ofstream(path) << j.dump(1);
  return path;
}

std::vector<CaseResult> run(const std::string& manifest, uint32_t subgroup = 0, bool isolate = false) {
  CompareOptions o;
  o.kernels = manifest, o.ops = "residual_add", o.shapes = "remainders", o.seeds = 1, o.quiet = true;
  o.subgroup = subgroup, o.isolate = isolate, o.worker_exe = MOE_CLI;
  return compare_cases(o);
}

TEST(driver_subgroup, AWorkgroupTooWideToPinRunsOnceUnpinned) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  const std::vector<CaseResult> rs = run(kData + "driver_subgroup.json");
  ASSERT_GE(rs.size(), 5u);
  for (const CaseResult& r : rs) {
    EXPECT_EQ(r.status(), CaseResult::Status::Pass) << case_line(r) << " " << r.error;
    EXPECT_EQ(r.subgroup, 0u) << case_line(r);
    EXPECT_NE(case_line(r).find(" sg=driver "), std::string::npos) << case_line(r);
  }
  // --subgroup N does not multiply or drop a driver-sized kernel: it runs once, unpinned.
  const std::vector<CaseResult> at8 = run(kData + "driver_subgroup.json", 8);
  ASSERT_EQ(at8.size(), rs.size());
  for (const CaseResult& r : at8) EXPECT_EQ(r.subgroup, 0u) << case_line(r);
  // Isolated workers give the same lines.
  const std::vector<CaseResult> iso = run(kData + "driver_subgroup.json", 0, true);
  ASSERT_EQ(iso.size(), rs.size());
  for (size_t i = 0; i < iso.size(); ++i) {  // the lines but for their timings
    EXPECT_EQ(iso[i].status(), rs[i].status()) << case_line(iso[i]);
    EXPECT_EQ(iso[i].subgroup, 0u) << case_line(iso[i]);
    EXPECT_EQ(iso[i].shape, rs[i].shape);
  }
}

TEST(driver_subgroup, PinnedTheSameKernelIsRefusedPerCase) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  const vk::DeviceInfo info = vk::Context("").info();
  if (!info.subgroup_size_control || info.max_subgroup_size >= 16) GTEST_SKIP() << "512 lanes fit at a pinned size here";
  const std::string any = variant([](nlohmann::json& k) { k["subgroup_sizes"] = "any"; }, "any");
  for (bool isolate : {false, true}) {
    const std::vector<CaseResult> rs = run(any, 0, isolate);
    ASSERT_GE(rs.size(), 5u);
    for (const CaseResult& r : rs) {  // every case fails with the reason; none is dropped
      EXPECT_EQ(r.status(), CaseResult::Status::Fail) << case_line(r);
      EXPECT_NE(r.error.find("exceeds maxComputeWorkgroupSubgroups x size"), std::string::npos) << r.error;
      EXPECT_EQ(r.error.find("worker"), std::string::npos) << r.error;
    }
  }
}

TEST(driver_subgroup, ExpressionsSeeTheDefaultSizeAndTheInvocationLimit) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  const vk::DeviceInfo info = vk::Context("").info();
  // A limit that never holds shows the values the kernel's expressions see.
  const std::string m = variant([](nlohmann::json& k) { k["limits"] = {"subgroup_size < 0 && max_workgroup_subgroups < 0"}; },
                                "values");
  const std::vector<CaseResult> rs = run(m);
  ASSERT_FALSE(rs.empty());
  const std::string want = "(subgroup_size = " + std::to_string(info.subgroup_size) + ", max_workgroup_subgroups = " +
                           std::to_string(info.max_workgroup_invocations / info.subgroup_size) + ")";
  for (const CaseResult& r : rs) EXPECT_NE(r.skip_reason.find(want), std::string::npos) << r.skip_reason << " vs " << want;
}

// A sequence whose first pass is pinned ("any") and whose second is left to the driver: the plan
// runs at every size the device pins, the second pass unpinned beside the first, its expressions
// seeing the unpinned limits (here a limit that holds only there: at a pinned size 8 on lavapipe,
// 32 subgroups x 8 = 256 invocations, unpinned 1024).
TEST(driver_subgroup, AMixedSequencePinsOnlyThePinnedPass) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  const vk::DeviceInfo info = vk::Context("").info();
  if (!info.subgroup_size_control || uint64_t(info.max_workgroup_subgroups) * info.max_subgroup_size >=
                                         info.max_workgroup_invocations)
    GTEST_SKIP() << "pinned and unpinned limits are the same here";
  std::ifstream f(kData + "layouts/layouts.json");
  nlohmann::json j = nlohmann::json::parse(f, nullptr, true, /*ignore_comments=*/true);
  nlohmann::json kernels = nlohmann::json::array();
  for (auto k : j["kernels"]) {
    const std::string name = k["name"];
    if (name != "argmax_pass1" && name != "argmax_pass2") continue;
    k["glsl"] = kData + "layouts/" + k["glsl"].get<std::string>();
    if (name == "argmax_pass2") {
      k.erase("subgroup_sizes");  // the driver's
      k["limits"].push_back("max_workgroup_subgroups * subgroup_size == max_workgroup_invocations");
    }
    kernels.push_back(k);
  }
  j["kernels"] = kernels;
  moe::test::Scratch dir("driver_subgroup_mixed");
  std::filesystem::create_directories(dir.dir);
  const std::string path = (dir.dir / "mixed.json").string();
  std::ofstream(path) << j.dump(1);
  CompareOptions o;
  o.kernels = path, o.ops = "argmax", o.shapes = "remainders", o.seeds = 1, o.quiet = true;
  const std::vector<CaseResult> rs = compare_cases(o);
  ASSERT_GE(rs.size(), 3u);
  for (const CaseResult& r : rs) {
    EXPECT_EQ(r.status(), CaseResult::Status::Pass) << case_line(r) << " " << r.error << r.skip_reason;
    EXPECT_NE(r.subgroup, 0u) << case_line(r);  // the plan is pinned
    EXPECT_EQ(r.kernel, "argmax_pass1 -> argmax_pass2");
  }
}

}  // namespace
}  // namespace moe::compare
