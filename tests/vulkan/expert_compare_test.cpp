// The expert group's kernels (matmul_q4, matmul_q8, expert_gate_up, and the swiglu_expert chain
// expert_gate_up -> matmul_q4) on the default Vulkan device (lavapipe in CI): they pass every
// case at every subgroup size over a few seeds, and each planted bug (tests/vulkan/data/
// planted_expert*.json) is caught by the criterion that exists for it, on the cases where it
// is wrong.
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

// The single output's verdict failed by exactly the per-element criterion (among possibly
// others), with no driver error: the bug is caught by the bound, not by accident.
bool failed_by_element(const CaseResult& r) {
  return r.error.empty() && r.outputs.size() == 1 && !r.outputs[0].pass && (r.outputs[0].failed & kElement) &&
         r.outputs[0].unwritten == 0;
}

TEST(expert_compare, BundledKernelsPassAtEverySubgroupSize) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  expect_bundled_pass("matmul_q,expert_gate_up,swiglu_expert",
                      {"matmul_q4", "matmul_q8", "expert_gate_up", "expert_gate_up -> matmul_q4"}, 100);
}

TEST(expert_compare, PlantedBugsAreCaught) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  const std::vector<CaseResult> rs = run(kData + "planted_expert.json", "matmul_q,expert_gate_up", "remainders", 1);

  // Token stride forgotten: every token reads token 0's x. Right at T = 1, over budget at T > 1.
  int64_t caught = 0;
  for (const CaseResult* r : of_kernel(rs, "matmul_q4_token0")) {
    if (param(*r, "tokens") == 1) {
      EXPECT_EQ(r->status(), CaseResult::Status::Pass) << case_line(*r);
    } else {
      EXPECT_TRUE(failed_by_element(*r)) << case_line(*r);
      caught += failed_by_element(*r);
    }
  }
  EXPECT_GT(caught, 10);

  // Words counted in pairs of groups: wrong exactly when cols / 64 is odd (the last group
  // dropped), right otherwise.
  caught = 0;
  for (const CaseResult* r : of_kernel(rs, "matmul_q4_drops_last_group")) {
    if ((param(*r, "cols") / 64) % 2 == 1) {
      EXPECT_TRUE(failed_by_element(*r)) << case_line(*r);
      caught += failed_by_element(*r);
    } else {
      EXPECT_EQ(r->status(), CaseResult::Status::Pass) << case_line(*r);
    }
  }
  EXPECT_GT(caught, 5);

  // A 32-wide subgroup assumed for the lane stride: at a smaller subgroup, words [sg, 32) of
  // every 32 are skipped; at a larger one, words are summed twice. Wrong exactly when the row has
  // more words (cols / 4) than min(sg, 32); right at 32.
  caught = 0;
  int64_t wrong_here = 0;  // cases where the bug is a bug on this device (none where only 32 exists)
  for (const CaseResult* r : of_kernel(rs, "matmul_q8_assumes_sg32")) {
    const int64_t sg = subgroup_of(*r), words = param(*r, "cols") / 4;
    if (sg != 32 && words > std::min<int64_t>(sg, 32)) {
      ++wrong_here;
      EXPECT_TRUE(failed_by_element(*r)) << case_line(*r) << " (subgroup " << sg << ")";
      caught += failed_by_element(*r);
    } else {
      EXPECT_EQ(r->status(), CaseResult::Status::Pass) << case_line(*r) << " (subgroup " << sg << ")";
    }
  }
  EXPECT_EQ(caught, wrong_here);

  // silu on up instead of gate: wrong everywhere.
  for (const CaseResult* r : of_kernel(rs, "expert_gate_up_silu_on_up")) EXPECT_TRUE(failed_by_element(*r)) << case_line(*r);
  EXPECT_FALSE(of_kernel(rs, "expert_gate_up_silu_on_up").empty());

  // act rounded through f16 (2^-11 relative): beyond the f32 bound on the short dot products
  // (d = 64, 128: gamma_{d+1} mag ~ 1e-5 relative); at d = 4160 the any-order f32 bound is
  // itself ~1e-3 relative, so only the short cases must catch it.
  caught = 0;
  for (const CaseResult* r : of_kernel(rs, "expert_gate_up_f16_act"))
    if (param(*r, "hidden") <= 128 && param(*r, "tokens") * param(*r, "inter") >= 16) {
      EXPECT_TRUE(failed_by_element(*r)) << case_line(*r);
      caught += failed_by_element(*r);
    }
  EXPECT_GT(caught, 2);
}

// The chain's composition decides y: a wrong expert_gate_up stage (silu on up) with the correct
// matmul_q4 fails every swiglu_expert case by y's per-element bound.
TEST(expert_compare, PlantedStageBugFailsTheChain) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  const std::vector<CaseResult> rs = run(kData + "planted_expert_chain.json", "swiglu_expert", "remainders", 1);
  const std::vector<const CaseResult*> chain = of_kernel(rs, "expert_gate_up_silu_on_up -> matmul_q4");
  EXPECT_FALSE(chain.empty());
  for (const CaseResult* r : chain) {
    EXPECT_TRUE(failed_by_element(*r)) << case_line(*r) << " " << r->error;
    if (!r->outputs.empty()) {
      EXPECT_EQ(r->outputs[0].output, "y");
    }
  }
}

}  // namespace
}  // namespace moe::compare
