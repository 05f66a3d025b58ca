// Engine layouts (docs/manifests.md "Engine layouts") end to end on the default Vulkan device:
// kernels that hold their tensors in-place, at padded row strides, as per-slot bindings, in a
// packed params buffer and with a scratch buffer (tests/vulkan/data/layouts/) pass; a planted bug
// of each kind is caught by the criterion that exists for it; a layout a case cannot hold fails
// that case with the reason.
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "compare_test_util.h"

namespace moe::compare {
namespace {

using test::have_device;
using test::of_kernel;
using test::run_variant;
const std::string kLayouts = test::kData + "layouts/layouts.json";

int count(const std::vector<const CaseResult*>& rs, CaseResult::Status s) {
  return int(std::count_if(rs.begin(), rs.end(), [&](const CaseResult* r) { return r->status() == s; }));
}

TEST(layouts, CorrectKernelsPass) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  const std::vector<CaseResult> rs = test::run(kLayouts, "residual_add,rmsnorm,moe_combine,argmax", "all", 2);
  // The two argmax passes run as one plan (a sequence) over a named scratch buffer; neither
  // runs alone.
  for (const CaseResult& r : rs) EXPECT_NE(r.kernel, "argmax_pass1") << case_line(r);
  for (const char* k : {"residual_add_inplace", "rmsnorm_padded", "moe_combine_slots", "argmax_pass1 -> argmax_pass2",
                        "residual_add_ubo"}) {
    const auto ran = of_kernel(rs, k);
    EXPECT_EQ(count(ran, CaseResult::Status::Fail), 0) << k;
    EXPECT_GE(count(ran, CaseResult::Status::Pass), 4) << k;
    for (const CaseResult* r : ran) EXPECT_NE(r->status(), CaseResult::Status::Fail) << case_line(*r) << " " << r->error;
  }
}

TEST(layouts, PlantedBugsAreCaught) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  const std::vector<CaseResult> rs = test::run(kLayouts, "residual_add,rmsnorm", "all", 1);
  // In place, the last element forgotten: it keeps the input a, which is not a + b.
  const auto skip_last = of_kernel(rs, "residual_add_inplace_skips_last");
  ASSERT_FALSE(skip_last.empty());
  for (const CaseResult* r : skip_last) {
    EXPECT_EQ(r->status(), CaseResult::Status::Fail) << case_line(*r);
    const Verdict* v = test::verdict(*r, "y");
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(v->worst_index, test::param(*r, "n") - 1);
  }
  // A write into the row padding of y: outside every view of its buffer.
  const auto pad = of_kernel(rs, "rmsnorm_padded_writes_pad");
  ASSERT_FALSE(pad.empty());
  for (const CaseResult* r : pad) EXPECT_NE(r->error.find("was written outside its views"), std::string::npos) << r->error;
}

// `name` (with the rest of its sequence) from layouts.json, edited.
std::string variant(const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
  return test::manifest_variant(kLayouts, name, edit, "variant");
}

TEST(layouts, LayoutsACaseCannotHoldFailWithTheReason) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  // A view past the tensor's end.
  auto rs = run_variant(variant("rmsnorm_padded", [](nlohmann::json& k) { k["bindings"][0]["shape"][1] = "dim + 1"; }),
                        "rmsnorm");
  ASSERT_FALSE(rs.empty());
  for (const CaseResult& r : rs) {
    EXPECT_EQ(r.status(), CaseResult::Status::Fail);
    EXPECT_NE(r.error.find("binding 0 takes elements 0.."), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("declare a limit"), std::string::npos) << r.error;
  }
  // Rows at a stride smaller than the row: placed elements overlap.
  rs = run_variant(variant("rmsnorm_padded", [](nlohmann::json& k) { k["let"]["stride"] = "dim - 1"; }), "rmsnorm");
  int overlap = 0;
  for (const CaseResult& r : rs) overlap += r.error.find("views overlap") != std::string::npos;
  EXPECT_GT(overlap, 0);
  // An output no binding writes (a updated in place but never said to become y).
  rs = run_variant(variant("residual_add_inplace", [](nlohmann::json& k) { k["bindings"][0].erase("becomes"); }),
                   "residual_add");
  ASSERT_FALSE(rs.empty());
  for (const CaseResult& r : rs)
    EXPECT_NE(r.error.find("output 'y' of op 'residual_add' is written by no binding"), std::string::npos) << r.error;
  // A named scratch buffer declared with two sizes.
  rs = run_variant(variant("argmax_pass2", [](nlohmann::json& k) { k["bindings"][1]["scratch"] = "rows"; }), "argmax");
  ASSERT_FALSE(rs.empty());
  EXPECT_NE(rs[0].error.find("scratch 'partials' of"), std::string::npos) << rs[0].error;
  // A tensor the op does not have, named with the op's tensors.
  rs = run_variant(variant("residual_add_inplace", [](nlohmann::json& k) { k["bindings"][1]["tensor"] = "bb"; }),
                   "residual_add");
  ASSERT_FALSE(rs.empty());
  EXPECT_NE(rs[0].error.find("names tensor 'bb'; op 'residual_add' has: a, b, y"), std::string::npos) << rs[0].error;
}

}  // namespace
}  // namespace moe::compare
