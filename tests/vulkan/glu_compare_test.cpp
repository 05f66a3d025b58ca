// glu on the default Vulkan device (lavapipe in CI): the bundled kernel passes every case at every
// subgroup size; the one-tensor layouts engines use (gate and up as the two halves of a row, in
// either order: tests/vulkan/data/glu/) are gated as written through views; planted bugs of the
// op's kind are caught on exactly the cases where they change the result; a wrong manifest fails
// with the reason.
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "compare_test_util.h"
#include "spec/glu_spec.h"

namespace moe::compare {
namespace {

using namespace moe::compare::test;
const std::string kSplit = kData + "glu/glu_split.json";
// The op's remainder and real shapes (spec/glu_spec.h).
const int kRemainders = int(glu_shapes(true, false).size()), kReal = int(glu_shapes(false, true).size());

std::vector<CaseResult> all_shapes(const std::string& manifest) {
  std::vector<CaseResult> rs = run(manifest, "glu", "remainders", 1);
  const std::vector<CaseResult> real = run(manifest, "glu", "real", 1);
  rs.insert(rs.end(), real.begin(), real.end());
  return rs;
}

bool failed_by_element(const CaseResult& r) {
  const Verdict* v = verdict(r, "y");
  return r.error.empty() && v && !v->pass && (v->failed & kElement);
}

TEST(glu_compare, BundledKernelPassesAtEverySubgroupSize) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  // Every remainder shape x 3 seeds and the real ones.
  expect_bundled_pass("glu", {"glu"}, kRemainders * 3 + kReal);
}

TEST(glu_compare, OneTensorLayoutsPassInEitherOrder) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  const std::vector<CaseResult> rs = all_shapes(kSplit);
  for (const char* k : {"glu_split", "glu_split_swapped"}) {
    const auto ran = of_kernel(rs, k);
    EXPECT_EQ(ran.size(), size_t(kRemainders + kReal)) << k;
    for (const CaseResult* r : ran) EXPECT_EQ(r->status(), CaseResult::Status::Pass) << case_line(*r) << " " << r->error;
  }
}

TEST(glu_compare, PlantedBugsAreCaughtWhereTheyChangeTheResult) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  const std::vector<CaseResult> rs = all_shapes(kSplit);
  // erf where the tanh GELU is asked: wrong on every act 1 case (the two GELUs differ by up to
  // 2e-4 relative at |g| ~ 2, far past the bound), right on the others.
  int caught = 0;
  for (const CaseResult* r : of_kernel(rs, "glu_split_erf_for_tanh")) {
    if (param(*r, "act") == 1 && param(*r, "n") > 1) {
      EXPECT_TRUE(failed_by_element(*r)) << case_line(*r);
      ++caught;
    } else if (param(*r, "act") != 1) {
      EXPECT_EQ(r->status(), CaseResult::Status::Pass) << case_line(*r);
    }
  }
  EXPECT_GE(caught, 7);
  // tanh as (e^v - e^-v) / (e^v + e^-v): NaN once e^v overflows (v > 88.7, |g| > 12.3): the wide
  // gates (|g| up to 100) always reach it; SiLU and erf cases are untouched.
  bool wide_caught = false;
  for (const CaseResult* r : of_kernel(rs, "glu_split_naive_tanh")) {
    if (r->shape.rfind("wide gates", 0) == 0 && param(*r, "act") == 1) {
      EXPECT_EQ(r->status(), CaseResult::Status::Fail) << case_line(*r);
      wide_caught = true;
    }
    if (param(*r, "act") != 1) {
      EXPECT_EQ(r->status(), CaseResult::Status::Pass) << case_line(*r);
    }
  }
  EXPECT_TRUE(wide_caught);
}

// Writes the split manifest with `edit` applied to kernel glu_split (the only kernel kept), next
// to the original so its GLSL path resolves.
std::string variant(const std::function<void(nlohmann::json&)>& edit) {
  std::ifstream f(kSplit);
  nlohmann::json j = nlohmann::json::parse(f);
  nlohmann::json k = j["kernels"][0];
  edit(k);
  j["kernels"] = nlohmann::json::array({k});
  const std::string path = kData + "glu/variant_" + std::to_string(::getpid()) + ".json";
  std::ofstream(path) << j.dump(1);
  return path;
}

TEST(glu_compare, HalvesDeclaredInTheWrongOrderAreCaught) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  // The kernel reads [up | gate] but the manifest places [gate | up]: act(up) * gate.
  const std::string path = variant([](nlohmann::json& k) { k["push_constants"][2]["value"] = "1"; });
  const std::vector<CaseResult> rs = run(path, "glu", "remainders", 1);
  std::remove(path.c_str());
  int failed = 0;
  for (const CaseResult* r : of_kernel(rs, "glu_split")) failed += failed_by_element(*r);
  EXPECT_GE(failed, 20);  // every case but n = 1 draws where act(g) u and act(u) g agree only by chance
}

TEST(glu_compare, MisnamedTensorIsRefusedWithTheNames) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  const std::string path = variant([](nlohmann::json& k) { k["bindings"][0]["pack"][0]["tensor"] = "gates"; });
  const std::vector<CaseResult> rs = run(path, "glu", "remainders", 1);
  std::remove(path.c_str());
  ASSERT_FALSE(rs.empty());
  for (const CaseResult& r : rs) {
    EXPECT_EQ(r.status(), CaseResult::Status::Fail) << case_line(r);
    EXPECT_NE(r.error.find("names tensor 'gates'; op 'glu' has: gate, up, y"), std::string::npos) << r.error;
  }
}

}  // namespace
}  // namespace moe::compare
