// The DIFFERS verdict of a case under a declared difference (docs/manifests.md "Declared
// differences") in every report: status and summary counts, console, JSON, JUnit, HTML, and the
// lossless results codec the shards' merge and the isolated workers use.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compare/report/report.h"
#include "compare/report/result_codec.h"

namespace moe::compare {
namespace {

bool has(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

Verdict verdict(const std::string& name, float found) {
  const std::vector<double> truth = {1.0, 2.0};
  return decide({name, Kind::Reduction, {0.01}, {}, 0}, truth, std::vector<float>{1.0f, found});
}

CaseResult make_case(const std::string& shape, bool pass, const std::string& difference) {
  CaseResult c;
  c.op = "router_topk", c.kernel = "topk", c.params = "tokens=6", c.shape = shape, c.seed = 1, c.subgroup = 8;
  c.outputs = {verdict("w", pass ? 2.005f : 2.5f)};
  c.difference = difference;
  return c;
}

// Under a declared difference: failing (DIFFERS), passing; then the same failure undeclared
// (FAIL), and a declared case that fails by an error (FAIL: a difference excuses values only).
std::vector<CaseResult> sample() {
  std::vector<CaseResult> cs = {make_case("nan tokens", false, "NaN token to expert 0"),
                                make_case("nan tokens 2", true, "NaN token to expert 0"),
                                make_case("plain", false, "")};
  CaseResult e = make_case("guard", true, "NaN token to expert 0");
  e.error = "guard region after 'w' overwritten";
  cs.push_back(e);
  return cs;
}

TEST(Differences, StatusAndSummary) {
  const std::vector<CaseResult> cs = sample();
  EXPECT_EQ(cs[0].status(), CaseResult::Status::Differs);
  EXPECT_STREQ(status_name(cs[0].status()), "DIFFERS");
  EXPECT_EQ(cs[1].status(), CaseResult::Status::Pass);
  EXPECT_EQ(cs[2].status(), CaseResult::Status::Fail);
  EXPECT_EQ(cs[3].status(), CaseResult::Status::Fail);
  const Summary s = summarize(cs);
  EXPECT_EQ(s.passed, 1);
  EXPECT_EQ(s.failed, 2);
  EXPECT_EQ(s.differ, 1);
  EXPECT_EQ(s.declared, 3);
  EXPECT_EQ(summary_line(s), "1 passed, 2 failed, 0 skipped, 1 differ as declared, 2 under a declared difference passed");
  // Without any declared difference the line is as it always was.
  EXPECT_EQ(summary_line(summarize(std::vector<CaseResult>{cs[2]})), "0 passed, 1 failed, 0 skipped");
}

// An out-of-range index (an engine relying on robustBufferAccess) may be declared; a race, a bad
// shift, a crash or a hang may not, and nothing is excused without a declaration.
TEST(Differences, CoverOutOfRangeIndicesOnly) {
  const auto with = [](const std::string& error, const std::string& difference) {
    CaseResult c = make_case("rows", true, difference);
    c.error = error;
    return c.status();
  };
  const std::string oob = "out-of-range access (undefined behaviour): l2: index into 'data_d' (binding 1) past the buffer's usable size";
  EXPECT_EQ(with(oob, "no row guard"), CaseResult::Status::Differs);
  EXPECT_EQ(with(oob, ""), CaseResult::Status::Fail);
  EXPECT_EQ(with("out-of-range access (undefined behaviour): k: vals: a store to an element another subgroup stored "
                 "since the last barrier (a data race)", "no row guard"),
            CaseResult::Status::Fail);
  EXPECT_EQ(with("out-of-range access (undefined behaviour): k: shift by 32 or more", "no row guard"),
            CaseResult::Status::Fail);
  EXPECT_EQ(with("the worker running this case was killed by signal 11", "no row guard"), CaseResult::Status::Fail);
  EXPECT_EQ(with("vulkan: kernel hung or too slow: k did not finish within 10000 ms", "no row guard"),
            CaseResult::Status::Fail);
}

TEST(Differences, ConsoleShowsTheWhyAndTheEvidence) {
  std::ostringstream os;
  write_console(os, sample());
  const std::string out = os.str();
  EXPECT_TRUE(has(out, "DIFFERS  router_topk  topk  [nan tokens]  seed=1 sg=8  declared difference: NaN token to expert 0  w FAIL"))
      << out;
  EXPECT_TRUE(has(out, "PASS  router_topk  topk  [nan tokens 2]  seed=1 sg=8  declared difference not observed: NaN token to "
                       "expert 0"))
      << out;
  // The evidence and the reproduction command follow a DIFFERS line as they follow a FAIL line.
  const size_t at = out.find("DIFFERS");
  const size_t next = out.find("\nPASS", at);
  EXPECT_TRUE(has(out.substr(at, next - at), "reproduce: moeoracle compare --ops router_topk")) << out;
  EXPECT_TRUE(has(out.substr(at, next - at), "w[1]")) << out;
}

TEST(Differences, JsonJunitAndHtmlCarryIt) {
  std::ostringstream js;
  write_json(js, sample());
  const nlohmann::json j = nlohmann::json::parse(js.str());
  EXPECT_EQ(j["summary"]["differ"], 1);
  EXPECT_EQ(j["summary"]["declared"], 3);
  EXPECT_EQ(j["summary"]["failed"], 2);
  EXPECT_EQ(j["cases"][0]["status"], "DIFFERS");
  EXPECT_EQ(j["cases"][0]["difference"], "NaN token to expert 0");
  EXPECT_EQ(j["cases"][1]["status"], "PASS");
  EXPECT_EQ(j["cases"][1]["difference"], "NaN token to expert 0");
  EXPECT_EQ(j["cases"][2]["difference"], "");

  std::ostringstream xs;
  write_junit(xs, sample());
  const std::string x = xs.str();
  EXPECT_TRUE(has(x, "tests=\"4\" failures=\"2\"")) << x;  // DIFFERS is no failure...
  EXPECT_TRUE(has(x, "<system-out>declared difference: NaN token to expert 0\n")) << x;  // ...and not silent
  EXPECT_TRUE(has(x, "reproduce: moeoracle compare --ops router_topk --seed 1 --shapes &apos;nan tokens&apos;")) << x;

  std::ostringstream hs;
  write_html(hs, sample());
  const std::string h = hs.str();
  EXPECT_TRUE(has(h, "\"status\":\"DIFFERS\"")) << h;
  EXPECT_TRUE(has(h, "\"difference\":\"NaN token to expert 0\"")) << h;
  EXPECT_TRUE(has(h, "1 differ as declared")) << h;
  EXPECT_TRUE(has(h, "differ (declared)")) << h;
}

TEST(Differences, TheResultsCodecKeepsIt) {
  for (const CaseResult& c : sample()) {
    const CaseResult back = result_from_json(result_to_json(c));
    EXPECT_EQ(back.difference, c.difference);
    EXPECT_EQ(back.status(), c.status());
  }
  // Results written before declared differences existed load as "none declared".
  nlohmann::json old = result_to_json(sample()[2]);
  old.erase("difference");
  EXPECT_EQ(result_from_json(old).difference, "");
}

}  // namespace
}  // namespace moe::compare
