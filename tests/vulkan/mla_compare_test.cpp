// mla_attention's bundled kernel and cases on the default Vulkan device (lavapipe in CI): the
// kernel passes every case at every subgroup size, and each planted bug (tests/vulkan/data/
// planted_mla_*.comp) is caught by the output's per-element bound on exactly the cases where it
// changes the result.
#include "compare/run/driver.h"
#include "compare/vk/runner.h"
#include "test_util.h"
#include "vulkan/compare_test_util.h"

namespace moe::compare {
namespace {

using namespace moe::compare::test;

bool o_failed_by_element(const CaseResult& r) {
  const Verdict* v = verdict(r, "o");
  return r.error.empty() && v != nullptr && !v->pass && (v->failed & kElement) && v->unwritten == 0;
}

// Some token of the case sees more than one row.
bool several_rows(const CaseResult& r) { return param(r, "past") + param(r, "tokens") - 1 >= 1; }

TEST(mla_compare, BundledKernelPassesAtEverySubgroupSize) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  expect_bundled_pass("mla_attention", {"mla_attention"}, 3 * 6 + 2);
}

TEST(mla_compare, PlantedBugsAreCaughtWhereTheyChangeTheResult) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  const std::vector<CaseResult> rs = run(kData + "planted_mla.json", "mla_attention", "remainders", 1);
  // Where each bug changes o: the kv_b halves swapped everywhere; the rope term, the scale (never
  // 1 in the cases) and a token blind to its own row wherever a token sees more than one row
  // (past + t >= 1: with one row the softmax is 1 whatever the score); head 0's weights wherever
  // there are several heads.
  struct Bug {
    const char* kernel;
    bool (*wrong)(const CaseResult&);
  };
  const Bug bugs[] = {
      {"mla_no_rope", &several_rows},
      {"mla_kv_swapped", [](const CaseResult&) { return true; }},
      // (not where attention is one-hot: the peaked case's argmax row keeps all the weight at
      // either scale)
      {"mla_no_scale", [](const CaseResult& r) { return several_rows(r) && r.shape.find("peaked") == std::string::npos; }},
      {"mla_not_self", &several_rows},
      {"mla_head0_weights", [](const CaseResult& r) { return param(r, "heads") > 1; }},
      // The softmax without its max shift (exp(s) in the sum and the weights): the common factor
      // cancels, so only the peaked case's scores past the f32 exp range (inf / inf) show it.
      {"mla_no_max", [](const CaseResult& r) { return r.shape.find("peaked") != std::string::npos; }},
  };
  for (const Bug& b : bugs) {
    const bool one_case = std::string(b.kernel) == "mla_no_max";
    int wrong = 0;
    const std::vector<const CaseResult*> cs = of_kernel(rs, b.kernel);
    EXPECT_EQ(cs.size(), 6u) << b.kernel;
    for (const CaseResult* r : cs) {
      if (b.wrong(*r)) {
        ++wrong;
        // A swapped or shifted weight row may also read past kv_b's end: the access check fails
        // the case then, which is caught too.
        EXPECT_TRUE(o_failed_by_element(*r) || r->status() == CaseResult::Status::Fail) << b.kernel << ": " << case_line(*r);
      } else {
        EXPECT_EQ(r->status(), CaseResult::Status::Pass) << b.kernel << ": " << case_line(*r);
      }
    }
    EXPECT_GE(wrong, one_case ? 1 : 3) << b.kernel;
  }
}

}  // namespace
}  // namespace moe::compare
