// The compare harness end to end on the default Vulkan device (lavapipe in CI): the bundled
// kernels pass every case at every subgroup size, and each planted bug (tests/vulkan/data) is
// caught by the criterion that exists for it.
#include <algorithm>

#include "compare/run/driver.h"
#include "compare/vk/runner.h"
#include "compare_test_util.h"
#include "test_util.h"

namespace moe::compare {
namespace {

const std::string kData = std::string(MOE_SOURCE_DIR) + "/tests/vulkan/data/";

bool have_device() { return !vk::list_devices().empty(); }

std::vector<CaseResult> run(const std::string& manifest, const std::string& shapes, int seeds, uint64_t seed = 1) {
  CompareOptions o;
  o.kernels = manifest, o.shapes = shapes, o.seeds = seeds, o.seed = seed, o.quiet = true;
  return compare_cases(o);
}

std::vector<const CaseResult*> of_kernel(const std::vector<CaseResult>& rs, const std::string& kernel) {
  std::vector<const CaseResult*> out;
  for (const CaseResult& r : rs)
    if (r.kernel == kernel && r.status() != CaseResult::Status::Skip) out.push_back(&r);  // cases outside its limits
  return out;
}

TEST(compare, BundledKernelsPassEverywhere) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  // The remainder shapes of seeds 1 and 2 at this device's default subgroup size are
  // vulkan.bundled_sg8's (lavapipe's default width): seed 3 here, and the real shapes at 1..3.
  std::vector<CaseResult> rs = run("", "remainders", 1, 3);
  const std::vector<CaseResult> real = run("", "real", 3);
  rs.insert(rs.end(), real.begin(), real.end());
  int passed = 0;
  for (const CaseResult& r : rs) {
    EXPECT_NE(r.status(), CaseResult::Status::Fail) << case_line(r) << " " << r.error;
    passed += r.status() == CaseResult::Status::Pass;
  }
  EXPECT_GE(passed, 3 * 27);  // more than 27 cases (3 ops) x 3 seeds
}

TEST(compare, PlantedBugsAreCaught) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  const std::vector<CaseResult> a = run(kData + "planted_a.json", "all", 1);
  const std::vector<CaseResult> b = run(kData + "planted_b.json", "all", 1);
  auto failed = [](const std::vector<const CaseResult*>& rs) {
    return std::count_if(rs.begin(), rs.end(), [](const CaseResult* r) { return r->status() == CaseResult::Status::Fail; });
  };
  // Ignoring HF's (1 + w): the per-element bound catches it on every add_one case.
  EXPECT_GT(failed(of_kernel(a, "rmsnorm_ignores_add_one")), 0);
  // The last element never written: the poisoned output is detected as unwritten.
  bool unwritten = false;
  for (const CaseResult* r : of_kernel(a, "residual_add_misses_last"))
    for (const Verdict& v : r->outputs) unwritten |= v.unwritten > 0 && !v.pass;
  EXPECT_TRUE(unwritten);
  // A 32-wide subgroup assumed for the lane stride: at a smaller subgroup, words [sg, 32) of
  // every 32 are skipped; at a larger one, words are summed twice. Wrong exactly when the row has
  // more words (cols / 8) than min(sg, 32), e.g. every case at subgroup 4 and 8, but at 16 only
  // rows of more than 128 columns; right otherwise. The exactly computable cases (x one-hot in
  // word 8..15 or 24..31 of a 32-word row: compare/cases/exact_quant.h) show it at subgroup 4 and
  // 8, where both ranges are skipped; at 16 only words 16..31 are, so the seed decides.
  int64_t wrong_here = 0;
  for (const CaseResult* r : of_kernel(a, "matvec_q4_assumes_sg32")) {
    const int64_t sg = r->subgroup ? r->subgroup : vk::Context("").info().subgroup_size;
    const int64_t words = test::param(*r, "cols") / 8;
    if (r->shape.find("exact") != std::string::npos && sg > 8 && sg < 32) continue;  // either verdict is right
    if (sg != 32 && words > std::min<int64_t>(sg, 32)) {
      ++wrong_here;
      EXPECT_EQ(r->status(), CaseResult::Status::Fail) << case_line(*r) << " (subgroup " << sg << ")";
    } else {
      EXPECT_EQ(r->status(), CaseResult::Status::Pass) << case_line(*r) << " (subgroup " << sg << ")";
    }
  }
  if (vk::Context("").info().min_subgroup_size < 32) {
    EXPECT_GT(wrong_here, 0);
  }
  // A 0.1 % scale error: within no element's bound at real sizes (the norm ratio fails too).
  EXPECT_GT(failed(of_kernel(b, "rmsnorm_scaled")), 0);
  // The last group's bias dropped: every row is off by b * sum(x of that group) — except in the
  // exactly computable cases, whose biases are all 0 by construction (nothing to drop).
  std::vector<const CaseResult*> biased;
  for (const CaseResult* r : of_kernel(b, "matvec_q4_last_group_no_bias"))
    if (r->shape.find("exact") == std::string::npos) biased.push_back(r);
  EXPECT_GT(biased.size(), 0u);
  EXPECT_EQ(failed(biased), int64_t(biased.size()));
  // Writing past the end: the access checks name the index (runs without them see the guard
  // region changed: VulkanRunner.WriteOnePastTheEndBreaksTheGuard).
  bool overrun = false;
  for (const CaseResult* r : of_kernel(b, "residual_add_overruns"))
    overrun |= r->error.find("past the buffer's usable size") != std::string::npos;
  EXPECT_TRUE(overrun);
}

TEST(compare, UnknownOpAndShapeErrors) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  CompareOptions o;
  o.ops = "no_such_op", o.quiet = true;
  moe::test::expect_error([&] { compare_cases(o); }, "no comparison cases for op 'no_such_op' (ops with cases: dequant, matvec_q");
  // The list is op_list.def's order, then the stage ops (compare/manifest/stage_list.def).
  moe::test::expect_error([&] { compare_cases(o); }, "residual_add, glu, softmax, kv_append, attention_scores");
}

}  // namespace
}  // namespace moe::compare
