// The linear-attention kernels (conv1d_step, decay_beta, delta_net) end to end on the default
// Vulkan device: the bundled kernels pass every case at every subgroup size, and each planted
// bug (tests/vulkan/data/planted_lin*) is caught by the criterion that exists for it, at the
// step where it first shows.
#include <algorithm>
#include <map>
#include <set>

#include "test_util.h"
#include "vulkan/compare_test_util.h"

namespace moe::compare {
namespace {

using test::have_device, test::kData, test::of_kernel, test::subgroup_of, test::verdict;

const char* kOps = "conv1d_step,decay_beta,delta_net";

std::vector<CaseResult> run(const std::string& manifest, const std::string& shapes, int seeds) {
  return test::run(manifest, kOps, shapes, seeds);
}

// The planted manifest runs once for all tests below.
const std::vector<CaseResult>& planted() {
  static const std::vector<CaseResult> rs = run(kData + "planted_lin.json", "remainders", 1);
  return rs;
}

TEST(lin_compare, BundledKernelsPassAtEverySubgroupSize) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  const std::vector<CaseResult> rs = run("", "all", 2);
  std::set<std::pair<std::string, uint32_t>> ran;  // (op, subgroup size) with a passing case
  for (const CaseResult& r : rs) {
    EXPECT_EQ(r.status(), CaseResult::Status::Pass) << case_line(r) << " " << r.error << " " << r.skip_reason;
    if (r.status() == CaseResult::Status::Pass) ran.insert({r.op, r.subgroup});
  }
  const vk::DeviceInfo info = vk::Context("").info();
  const std::vector<uint32_t> sizes = info.subgroup_size_control ? info.subgroup_sizes() : std::vector<uint32_t>{0};
  for (const char* op : {"conv1d_step", "decay_beta", "delta_net"})
    for (uint32_t sg : sizes) EXPECT_TRUE(ran.count({op, sg})) << op << " never ran at subgroup size " << sg;
}

TEST(lin_compare, ConvStateNotWrittenBackFailsStateAtFirstStep) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  int seen = 0;
  for (const CaseResult* r : of_kernel(planted(), "conv_state_not_written")) {
    const Verdict* st = verdict(*r, "state@t=0");
    if (!st) continue;  // kernel 1 (no state) and the prefill cases
    ++seen;
    // y of the first token is right (the window was read); the state is not, bit for bit, and
    // the next token's y reads the stale window.
    EXPECT_TRUE(verdict(*r, "y@t=0")->pass) << case_line(*r);
    EXPECT_FALSE(st->pass) << case_line(*r);
    EXPECT_TRUE(st->failed & kElement) << case_line(*r) << " " << st->reason;
    EXPECT_EQ(st->kind, Kind::Exact);
    EXPECT_FALSE(verdict(*r, "y@t=1")->pass) << case_line(*r);
  }
  EXPECT_GT(seen, 0);
}

TEST(lin_compare, ConvShiftReversedFailsStateExactly) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  int seen = 0;
  for (const CaseResult* r : of_kernel(planted(), "conv_shift_reversed")) {
    if (r->params.find("kernel=2") != std::string::npos || r->params.find("kernel=1") != std::string::npos) {
      EXPECT_EQ(r->status(), CaseResult::Status::Pass) << case_line(*r);  // one or no slot: no order to get wrong
      continue;
    }
    const Verdict* st = verdict(*r, "state@t=0");
    if (!st) st = verdict(*r, "state");  // prefill: the final state
    ASSERT_NE(st, nullptr) << case_line(*r);
    ++seen;
    EXPECT_FALSE(st->pass) << case_line(*r);
    EXPECT_TRUE(st->failed & kElement) << case_line(*r) << " " << st->reason;
  }
  EXPECT_GT(seen, 0);
}

// Every case of the planted decay_beta kernel `kernel` fails exactly one of its outputs, "g" or
// "beta", per element, and passes the other.
void expect_only_output_fails(const char* kernel, const std::string& failing) {
  const auto rs = of_kernel(planted(), kernel);
  ASSERT_FALSE(rs.empty());
  for (const CaseResult* r : rs) {
    const Verdict *g = verdict(*r, "g"), *b = verdict(*r, "beta");
    ASSERT_TRUE(g && b) << case_line(*r);
    const Verdict* bad = failing == "g" ? g : b;
    const Verdict* good = failing == "g" ? b : g;
    EXPECT_FALSE(bad->pass) << kernel << ": " << case_line(*r);
    EXPECT_TRUE(bad->failed & kElement) << kernel << ": " << case_line(*r) << " " << bad->reason;
    EXPECT_TRUE(good->pass) << kernel << ": " << case_line(*r) << " " << good->reason;
  }
}

TEST(lin_compare, DecayWithWrongSignFailsGOnly) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  // g = exp(+P) >= 1: over budget wherever P is not tiny, +inf (against a finite truth) where
  // exp(P) overflows.
  expect_only_output_fails("decay_wrong_sign", "g");
}

TEST(lin_compare, DecayWithoutOuterExpFailsGOnly) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  expect_only_output_fails("decay_log_space", "g");
}

TEST(lin_compare, BetaWithWrongSignFailsBetaOnly) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  expect_only_output_fails("beta_wrong_sign", "beta");
}

TEST(lin_compare, EnginesSoftplusFormIsNotAFalseAlarm) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  // log(1 + exp(u)) is every engine's softplus (docs/ops/README.md "Scalar helpers"): inf past u = 88.7 (g = 0 by
  // definition) and 0 below u = -16.6. A correct engine kernel must pass, edge cases included.
  const auto rs = of_kernel(planted(), "decay_engine_softplus");
  ASSERT_FALSE(rs.empty());
  for (const CaseResult* r : rs) EXPECT_EQ(r->status(), CaseResult::Status::Pass) << case_line(*r);
}

TEST(lin_compare, DeltaStateNotWrittenBackFailsStateAtFirstStep) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  int seen = 0;
  for (const CaseResult* r : of_kernel(planted(), "delta_state_not_written")) {
    const Verdict* st = verdict(*r, "state@t=0");
    if (!st) {  // prefill: the final state
      const Verdict* fin = verdict(*r, "state");
      ASSERT_NE(fin, nullptr) << case_line(*r);
      EXPECT_FALSE(fin->pass) << case_line(*r);
      continue;
    }
    ++seen;
    EXPECT_TRUE(verdict(*r, "o@t=0")->pass) << case_line(*r);  // o reads the row in registers
    EXPECT_FALSE(st->pass) << case_line(*r);
    EXPECT_TRUE(st->failed & kElement) << case_line(*r) << " " << st->reason;
    EXPECT_FALSE(verdict(*r, "o@t=1")->pass) << case_line(*r);
  }
  EXPECT_GT(seen, 0);
}

TEST(lin_compare, DeltaAssumingSubgroup32FailsAtOtherSizes) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  std::map<uint32_t, int> failed, cases;
  for (const CaseResult* r : of_kernel(planted(), "delta_assumes_sg32")) {
    const uint32_t sg = subgroup_of(*r);
    ++cases[sg];
    if (r->status() == CaseResult::Status::Fail) {
      ++failed[sg];
      bool element = false;  // lanes skip or double-count k-indices: values off, not unwritten
      for (const Verdict& v : r->outputs) element |= !v.pass && (v.failed & kElement);
      EXPECT_TRUE(element) << case_line(*r);
    }
  }
  ASSERT_FALSE(cases.empty());
  for (const auto& [sg, n] : cases) {
    if (sg == 32)
      EXPECT_EQ(failed[sg], 0) << "right where the assumption holds";
    else
      EXPECT_GT(failed[sg], 0) << "subgroup size " << sg << " of " << n << " cases";
  }
}

TEST(lin_compare, DeltaKvFromUndecayedStateFailsAtFirstStep) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  int seen = 0;
  for (const CaseResult* r : of_kernel(planted(), "delta_kv_undecayed")) {
    const Verdict* st = verdict(*r, "state@t=0");
    if (!st || r->shape.find("special") != std::string::npos || r->shape.find("g=0") != std::string::npos)
      continue;  // g = 1 heads hide it; the realistic cases have g in [0.9, 1)
    ++seen;
    EXPECT_FALSE(st->pass) << case_line(*r);
    EXPECT_TRUE(st->failed & kElement) << case_line(*r) << " " << st->reason;
  }
  EXPECT_GT(seen, 0);
}

TEST(lin_compare, DeltaHfStateLayoutFailsState) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  int seen = 0;
  for (const CaseResult* r : of_kernel(planted(), "delta_hf_layout")) {
    if (r->shape.find("dk 1, dv 1") != std::string::npos) continue;  // 1x1: the layouts coincide
    const Verdict* st = verdict(*r, "state@t=0");
    if (!st) st = verdict(*r, "state");
    ASSERT_NE(st, nullptr) << case_line(*r);
    ++seen;
    EXPECT_FALSE(st->pass) << case_line(*r);
    EXPECT_TRUE(st->failed & kElement) << case_line(*r) << " " << st->reason;
  }
  EXPECT_GT(seen, 0);
}

}  // namespace
}  // namespace moe::compare
