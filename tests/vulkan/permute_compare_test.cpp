// The permute group's kernels (permute_gate_up, permute_gate_up_decode, permute_down_scatter, and
// the moe_permute_fuse chains through them) on the default Vulkan device (lavapipe in CI):
// they pass every case at every subgroup size over a few seeds, and each planted bug
// (tests/vulkan/data/planted_permute*.json) is caught by the per-element bound on the cases
// where it is wrong.
#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "compare/run/driver.h"
#include "compare/vk/runner.h"
#include "test_util.h"
#include "vulkan/compare_test_util.h"

namespace moe::compare {
namespace {

using namespace moe::compare::test;

// The single decided output `name` failed by the per-element criterion, every element written,
// no driver error: the bug is caught by the bound, not by accident.
bool failed_by_element(const CaseResult& r, const std::string& name) {
  return r.error.empty() && r.outputs.size() == 1 && r.outputs[0].output == name && !r.outputs[0].pass &&
         (r.outputs[0].failed & kElement) && r.outputs[0].unwritten == 0;
}

TEST(permute_compare, BundledKernelsPassAtEverySubgroupSize) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  expect_bundled_pass("moe_permute_fuse,permute_gate_up,permute_down_scatter",
                      {"permute_gate_up", "permute_gate_up_decode", "permute_down_scatter",
                       "permute_gate_up -> permute_down_scatter", "permute_gate_up_decode -> permute_down_scatter"},
                      30);
}

TEST(permute_compare, PlantedBugsAreCaught) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  const std::vector<CaseResult> rs =
      run(kData + "planted_permute.json", "permute_gate_up,permute_down_scatter", "remainders", 1);

  // Wrong everywhere (every case has B >= 2 buckets, weights < 1 and a non-zero out_in):
  //   token_idx off by one: token t sums token t-1's rows (token 0 none);
  //   weights ignored: each routed y counted with w = 1 (the weights sum to 1 per token, K >= 2);
  //   out overwritten: out_in dropped (except in the x * 300 case: there |y| ~ 1e5 |out_in|, so
  //   out_in, about 1, lies within the f32 bound of the routed sum: a correct kernel may lose it);
  //   next bucket's expert: every bucket but the last computed with the wrong gate/up.
  const std::pair<const char*, const char*> everywhere[] = {{"permute_token_off_by_one", "out"},
                                                            {"permute_weights_ignored", "out"},
                                                            {"permute_overwrites_out", "out"},
                                                            {"permute_next_expert", "act"}};
  for (const auto& [kernel, output] : everywhere) {
    const std::vector<const CaseResult*> cs = of_kernel(rs, kernel);
    EXPECT_GE(cs.size(), 9u) << kernel;
    for (const CaseResult* r : cs) {
      if (std::string(kernel) == "permute_overwrites_out" && r->shape.find("x * 300") != std::string::npos) continue;
      EXPECT_TRUE(failed_by_element(*r, output)) << kernel << ": " << case_line(*r);
    }
  }

  // A 32-wide subgroup assumed for the lane stride over a down row's words (inter * bits / 32):
  // at a smaller subgroup words [sg, 32) of every 32 are skipped, at a larger one words are
  // summed twice. Wrong exactly when words > min(sg, 32) and sg != 32; right otherwise.
  int64_t caught = 0, wrong_here = 0, non32 = 0;
  for (const CaseResult* r : of_kernel(rs, "permute_assumes_sg32")) {
    const int64_t sg = subgroup_of(*r), words = param(*r, "inter") * param(*r, "bits") / 32;
    non32 += sg != 32;
    if (sg != 32 && words > std::min<int64_t>(sg, 32)) {
      ++wrong_here;
      EXPECT_TRUE(failed_by_element(*r, "out")) << case_line(*r) << " (subgroup " << sg << ")";
      caught += failed_by_element(*r, "out");
    } else {
      EXPECT_EQ(r->status(), CaseResult::Status::Pass) << case_line(*r) << " (subgroup " << sg << ")";
    }
  }
  EXPECT_EQ(caught, wrong_here);
  if (non32) {
    EXPECT_GT(wrong_here, 0);  // inter 128 at 4 bits: 16 words, more than a subgroup of 8
  }
}

// The chain's composition decides out: a wrong down_scatter stage (weights ignored) behind the
// correct permute_gate_up fails every moe_permute_fuse case by out's per-element bound.
TEST(permute_compare, PlantedStageBugFailsTheChain) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  const std::vector<CaseResult> rs = run(kData + "planted_permute_chain.json", "moe_permute_fuse", "remainders", 1);
  const std::vector<const CaseResult*> chain = of_kernel(rs, "permute_gate_up -> permute_weights_ignored");
  EXPECT_GE(chain.size(), 9u);
  for (const CaseResult* r : chain) EXPECT_TRUE(failed_by_element(*r, "out")) << case_line(*r);
}

}  // namespace
}  // namespace moe::compare
