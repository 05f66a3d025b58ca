// Declared differences end to end (docs/manifests.md "Declared differences"): a router_topk of
// ours (tests/vulkan/data/differs_topk_nan_first_experts.comp) that routes a token with a NaN
// logit to experts 0..k-1 instead of the contract's -1/NaN. Declared: DIFFERS on the cases with a
// NaN logit, PASS elsewhere, the run not failed; undeclared: FAIL there; a data predicate as a
// limit skips those cases; `moeoracle mutate` scores the declared kernel and refuses the
// undeclared one's baseline.
#include <sys/wait.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <array>
#include <cstdio>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "vulkan/compare_test_util.h"

namespace moe::compare {
namespace {

using test::have_device, test::kData, test::of_kernel;

// The router_topk cases with a NaN logit (RouterData::NonFinite puts one in token 1).
bool has_nan_token(const CaseResult& r) {
  return r.shape.find("NaN") != std::string::npos || r.shape.find("undefined token last") != std::string::npos;
}

// Cases with a NaN token per seed: two shapes at every subgroup size the device offers.
int nan_cases() {
  return 2 * int(std::max<size_t>(1, vk::Context("").info().subgroup_sizes().size()));
}

const std::vector<CaseResult>& results() {
  static const std::vector<CaseResult> rs = test::run(kData + "differences.json", "router_topk", "remainders", 1);
  return rs;
}

TEST(differences, DeclaredDifferenceDiffersWhereItShowsAndPassesElsewhere) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  int differs = 0, passed = 0;
  std::vector<CaseResult> mine;
  for (const CaseResult* r : of_kernel(results(), "topk_nan_first_experts_declared")) {
    mine.push_back(*r);
    if (has_nan_token(*r)) {
      EXPECT_EQ(r->status(), CaseResult::Status::Differs) << case_line(*r);
      EXPECT_NE(r->difference.find("a token with a NaN logit goes to experts 0..k-1"), std::string::npos) << r->difference;
      const std::string line = case_line(*r);
      EXPECT_EQ(line.rfind("DIFFERS", 0), 0u) << line;
      EXPECT_NE(line.find("declared difference: a token with a NaN logit"), std::string::npos) << line;
      ++differs;
    } else {
      EXPECT_EQ(r->status(), CaseResult::Status::Pass) << case_line(*r) << " " << r->error;
      EXPECT_EQ(r->difference, "") << case_line(*r);  // any_nan(logits) is 0 here
      ++passed;
    }
  }
  EXPECT_EQ(differs, nan_cases());
  EXPECT_GE(passed, 10);
  // Counted apart, and not a failure of the run.
  const Summary s = summarize(mine);
  EXPECT_EQ(s.failed, 0);
  EXPECT_EQ(s.differ, differs);
  EXPECT_EQ(s.declared, differs);
  EXPECT_NE(summary_line(s).find(std::to_string(differs) + " differ as declared, 0 under a declared difference passed"),
            std::string::npos)
      << summary_line(s);
}

TEST(differences, UndeclaredTheSameKernelFails) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  int failed = 0;
  for (const CaseResult* r : of_kernel(results(), "topk_nan_first_experts_undeclared")) {
    EXPECT_EQ(r->status(), has_nan_token(*r) ? CaseResult::Status::Fail : CaseResult::Status::Pass) << case_line(*r);
    failed += r->status() == CaseResult::Status::Fail;
  }
  EXPECT_EQ(failed, nan_cases());
}

TEST(differences, ADifferenceNotShownPassesAndSaysSo) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  int declared = 0;
  for (const CaseResult* r : of_kernel(results(), "topk_contract_declared")) {
    EXPECT_EQ(r->status(), CaseResult::Status::Pass) << case_line(*r) << " " << r->error;
    if (!has_nan_token(*r)) continue;
    EXPECT_NE(case_line(*r).find("declared difference not observed: declared but never shown"), std::string::npos)
        << case_line(*r);
    ++declared;
  }
  EXPECT_EQ(declared, nan_cases());
}

TEST(differences, ADataPredicateLimitSkipsWithTheValues) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  // Alone in its manifest: a case one plan skips and another runs is reported by the one that ran.
  int skipped = 0;
  for (const CaseResult& r : test::run(kData + "differences_limit.json", "router_topk", "remainders", 1)) {
    if (has_nan_token(r)) {
      EXPECT_EQ(r.status(), CaseResult::Status::Skip) << case_line(r);
      EXPECT_NE(r.skip_reason.find("all_finite(logits) || !any_nan(logits) (all_finite(logits) = 0, any_nan(logits) = 1)"),
                std::string::npos)
          << r.skip_reason;
      ++skipped;
    } else {
      EXPECT_EQ(r.status(), CaseResult::Status::Pass) << case_line(r);
    }
  }
  EXPECT_EQ(skipped, nan_cases());
}

TEST(differences, AnUnknownTensorInWhenFailsTheCaseNamingIt) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  std::ifstream f(kData + "differences.json");
  nlohmann::json j = nlohmann::json::parse(f);
  j["kernels"] = nlohmann::json::array({j["kernels"][0]});
  j["kernels"][0]["glsl"] = kData + j["kernels"][0]["glsl"].get<std::string>();
  j["kernels"][0]["differences"][0]["when"] = "any_nan(logit)";
  moe::test::Scratch dir("differences_unknown");
  std::filesystem::create_directories(dir.dir);
  const std::string path = (dir.dir / "m.json").string();
  std::ofstream(path) << j.dump();
  const std::vector<CaseResult> rs = test::run(path, "router_topk", "remainder E 33 K 5 NaN/inf tokens", 1);
  ASSERT_FALSE(rs.empty());
  for (const CaseResult& r : rs) {
    EXPECT_EQ(r.status(), CaseResult::Status::Fail) << case_line(r);
    EXPECT_NE(r.error.find("'topk_nan_first_experts_declared': differences[0].when: expression 'any_nan(logit)': "
                           "any_nan(logit): unknown tensor 'logit' (the op's input tensors: logits)"),
              std::string::npos)
        << r.error;
  }
}

// `moeoracle mutate` in its own process (it forks its children; this process has a device open).
// Output and exit status of `cmd` (stderr included).
std::pair<std::string, int> shell(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return {"popen failed", -1};
  std::array<char, 4096> buf;
  size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  const int status = ::pclose(p);
  return {out, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

TEST(differences, MutateScoresADeclaredKernelAndRefusesAnUndeclaredOne) {
  if (!have_device()) GTEST_SKIP() << "no Vulkan device";
  const std::string base = std::string(MOE_CLI) + " mutate --kernels '" + kData +
                           "differences.json' --ops router_topk --shapes remainders --seeds 1 --max-per-kernel 3 --kernel ";
  // The DIFFERS cases neither fail the baseline nor kill a mutant: the kernel is scored.
  auto [out, rc] = shell(base + "topk_nan_first_experts_declared");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("topk_nan_first_experts_declared"), std::string::npos) << out;
  EXPECT_EQ(out.find("fails a case"), std::string::npos) << out;
  // Undeclared, the same kernel's baseline fails: nothing can be scored; the unit is reported not
  // judged, its mutants not run, and the run exits 1.
  std::tie(out, rc) = shell(base + "topk_nan_first_experts_undeclared");
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("NOT JUDGED topk_nan_first_experts_undeclared: "), std::string::npos) << out;
  EXPECT_NE(out.find(" 0 killed (0 by timeout), 0 survived"), std::string::npos) << out;
  EXPECT_NE(out.find("the unmutated kernel 'topk_nan_first_experts_undeclared' fails a case"), std::string::npos) << out;
}

}  // namespace
}  // namespace moe::compare
