// Report writers: statuses and the summary, the console evidence and reproduction line, JSON that
// parses, and JUnit XML that is well formed (checked by a small tag-balance parser) and escaped.
#include "compare/report/report.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "test_util.h"

namespace moe::compare {
namespace {

bool has(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

size_t count(const std::string& s, const std::string& needle) {
  size_t n = 0;
  for (size_t p = s.find(needle); p != std::string::npos; p = s.find(needle, p + 1)) ++n;
  return n;
}

Verdict passing(const std::string& name) {
  const std::vector<double> truth = {1.0, 2.0};
  return decide({name, Kind::Reduction, {0.01}, {}, 0}, truth, std::vector<float>{1.0f, 2.005f});
}

Verdict failing(const std::string& name) {
  const std::vector<double> truth = {1.0, 2.0};
  return decide({name, Kind::Reduction, {0.01}, {}, 0}, truth, std::vector<float>{1.0f, 2.5f});
}

CaseResult make_case(std::string op, std::string shape, uint64_t seed) {
  CaseResult c;
  c.op = std::move(op);
  c.kernel = c.op + "_f32";
  c.params = "rows=1 dim=2";
  c.shape = std::move(shape);
  c.seed = seed;
  c.subgroup = 8;
  return c;
}

// The four kinds of case: pass, fail on numbers, fail on an error, skip.
std::vector<CaseResult> sample() {
  std::vector<CaseResult> cs;
  CaseResult a = make_case("rmsnorm", "A3B hidden", 7);
  a.outputs = {passing("y")};
  a.gpu_ms = 0.5, a.bytes = 1e6, a.flops = 2e6;
  cs.push_back(a);
  CaseResult b = make_case("rmsnorm", "remainder 33", 8);
  b.outputs = {passing("y"), failing("state")};
  cs.push_back(b);
  CaseResult c = make_case("matvec_bf16", "tiny", 9);
  c.error = "guard region after 'y' overwritten: out-of-bounds write";
  cs.push_back(c);
  CaseResult d = make_case("matvec_bf16", "huge", 10);
  d.skipped = true, d.skip_reason = "dim <= 8192 (dim = 16384)";
  cs.push_back(d);
  return cs;
}

std::string xml_problem(const std::string& x);

TEST(Report, StatusAndSummary) {
  const std::vector<CaseResult> cs = sample();
  EXPECT_EQ(cs[0].status(), CaseResult::Status::Pass);
  EXPECT_EQ(cs[1].status(), CaseResult::Status::Fail);
  EXPECT_EQ(cs[2].status(), CaseResult::Status::Fail);
  EXPECT_EQ(cs[3].status(), CaseResult::Status::Skip);
  EXPECT_EQ(summary_line(summarize(cs)), "1 passed, 2 failed, 1 skipped");
  // A case with nothing compared cannot pass.
  EXPECT_EQ(make_case("x", "s", 1).status(), CaseResult::Status::Fail);
  // A pass near the budget is counted and shown.
  CaseResult w = make_case("x", "s", 1);
  w.outputs = {decide({"y", Kind::Reduction, {0.01}, {}, 0}, std::vector<double>{1.0}, std::vector<float>{1.0095f})};
  EXPECT_TRUE(w.warn());
  EXPECT_EQ(summary_line(summarize(std::vector<CaseResult>{w})), "1 passed, 0 failed, 0 skipped, 1 near the budget");
  EXPECT_TRUE(case_line(w).starts_with("WARN")) << case_line(w);
  std::ostringstream os;
  write_console(os, std::vector<CaseResult>{w});
  EXPECT_TRUE(has(os.str(), "      y: worst y[0] at 95% of its bound")) << os.str();
  EXPECT_TRUE(has(os.str(), "      reproduce: moeoracle compare --ops x --seed 1 --shapes s --subgroup 8")) << os.str();
  std::ostringstream xs;
  write_junit(xs, std::vector<CaseResult>{w});
  EXPECT_EQ(xml_problem(xs.str()), "") << xs.str();
  EXPECT_TRUE(has(xs.str(), "<system-out>y: worst y[0] at 95% of its bound")) << xs.str();
  EXPECT_EQ(count(xs.str(), "<failure"), 0u);
}

TEST(Report, ReproCommandQuotesForTheShell) {
  CaseResult c = make_case("rmsnorm", "A3B hidden", 7);
  EXPECT_EQ(repro_command(c), "moeoracle compare --ops rmsnorm --seed 7 --shapes 'A3B hidden' --subgroup 8");
  c.shape = "tiny", c.manifest = "/x/engine's kernels.json";
  EXPECT_EQ(repro_command(c),
            "moeoracle compare --ops rmsnorm --seed 7 --shapes tiny --subgroup 8 --kernels '/x/engine'\\''s kernels.json'");
}

TEST(Report, ConsoleShowsEvidenceAndReproduction) {
  std::ostringstream os;
  write_console(os, sample());
  const std::string out = os.str();
  EXPECT_TRUE(has(out, "PASS  rmsnorm  rmsnorm_f32  [A3B hidden]  seed=7 sg=8  y 50%  0.5 ms 2 GB/s 4 GFLOP/s")) << out;
  EXPECT_TRUE(has(out, "FAIL  rmsnorm  rmsnorm_f32  [remainder 33]  seed=8 sg=8  y 50%  state FAIL")) << out;
  EXPECT_TRUE(has(out, "      state[1] expected 2 found 2.5: 5000% of its bound 0.01")) << out;
  EXPECT_TRUE(has(out, "      reproduce: moeoracle compare --ops rmsnorm --seed 8 --shapes 'remainder 33' --subgroup 8"))
      << out;
  EXPECT_TRUE(has(out, "      guard region after 'y' overwritten")) << out;
  EXPECT_TRUE(has(out, "SKIP  matvec_bf16  matvec_bf16_f32  [huge]  seed=10 sg=8  skipped: dim <= 8192 (dim = 16384)"))
      << out;
  EXPECT_EQ(count(out, "reproduce: "), 2u);  // failures only
  EXPECT_TRUE(out.ends_with("1 passed, 2 failed, 1 skipped\n")) << out;
}

TEST(Report, JsonParsesAndCarriesTheVerdicts) {
  std::ostringstream os;
  write_json(os, sample());
  const nlohmann::json j = nlohmann::json::parse(os.str());
  EXPECT_EQ(j["summary"]["passed"], 1);
  EXPECT_EQ(j["summary"]["failed"], 2);
  EXPECT_EQ(j["summary"]["skipped"], 1);
  ASSERT_EQ(j["cases"].size(), 4u);
  const auto& b = j["cases"][1];
  EXPECT_EQ(b["status"], "FAIL");
  EXPECT_EQ(b["shape"], "remainder 33");
  EXPECT_EQ(b["outputs"][1]["name"], "state");
  EXPECT_EQ(b["outputs"][1]["worst_index"], 1);
  EXPECT_EQ(b["outputs"][1]["failed"][0], "element");
  EXPECT_DOUBLE_EQ(b["outputs"][1]["budget_used"].get<double>(), 50.0);
  EXPECT_TRUE(b["gpu_ms"].is_null());  // not measured
  EXPECT_TRUE(has(b["repro"].get<std::string>(), "--seed 8"));
  EXPECT_EQ(j["cases"][3]["skip_reason"], "dim <= 8192 (dim = 16384)");
  // An infinite budget (bit-exact mismatch) becomes null, not invalid JSON.
  CaseResult e = make_case("dequant", "s", 1);
  e.outputs = {decide({"y", Kind::Exact, {}, {}, 0}, std::vector<double>{1.0}, std::vector<float>{2.0f})};
  std::ostringstream es;
  write_json(es, std::vector<CaseResult>{e});
  EXPECT_TRUE(nlohmann::json::parse(es.str())["cases"][0]["outputs"][0]["budget_used"].is_null());
}

// A minimal XML well-formedness check: tags balance, attribute values are quoted and hold no raw
// '<' or '&' that does not start an entity, text holds no raw '<'. Returns "" or the problem.
std::string xml_problem(const std::string& x) {
  std::vector<std::string> stack;
  auto entity_ok = [&](size_t p) {
    for (const char* e : {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"})
      if (x.compare(p, std::strlen(e), e) == 0) return true;
    return false;
  };
  size_t i = 0;
  if (!x.starts_with("<?xml ")) return "no XML declaration";
  i = x.find("?>") + 2;
  while (i < x.size()) {
    if (x[i] == '&' && !entity_ok(i)) return "raw & in text at " + std::to_string(i);
    if (x[i] != '<') {
      ++i;
      continue;
    }
    const bool closing = x[i + 1] == '/';
    size_t j = i + (closing ? 2 : 1);
    const size_t name_end = x.find_first_of(" />", j);
    const std::string name = x.substr(j, name_end - j);
    j = name_end;
    bool self_closing = false;
    while (j < x.size() && x[j] != '>') {
      if (x[j] == '"') {
        const size_t end = x.find('"', j + 1);
        for (size_t k = j + 1; k < end; ++k) {
          if (x[k] == '<') return "raw < in an attribute of <" + name + ">";
          if (x[k] == '&' && !entity_ok(k)) return "raw & in an attribute of <" + name + ">";
        }
        j = end + 1;
        continue;
      }
      if (x[j] == '<') return "< inside tag <" + name + ">";
      if (x[j] == '/') self_closing = true;
      ++j;
    }
    if (closing) {
      if (stack.empty() || stack.back() != name) return "unbalanced </" + name + ">";
      stack.pop_back();
    } else if (!self_closing) {
      stack.push_back(name);
    }
    i = j + 1;
  }
  return stack.empty() ? "" : "unclosed <" + stack.back() + ">";
}

TEST(Report, XmlCheckerRejectsBadXml) {  // the checker itself can fail
  EXPECT_NE(xml_problem("<?xml version=\"1.0\"?>\n<a><b></a>"), "");
  EXPECT_NE(xml_problem("<?xml version=\"1.0\"?>\n<a x=\"1<2\"/>"), "");
  EXPECT_NE(xml_problem("<?xml version=\"1.0\"?>\n<a>x & y</a>"), "");
  EXPECT_EQ(xml_problem("<?xml version=\"1.0\"?>\n<a x=\"&lt;\"><b/>t &amp; u</a>"), "");
}

TEST(Report, JunitStructure) {
  std::ostringstream os;
  write_junit(os, sample());
  const std::string x = os.str();
  EXPECT_EQ(xml_problem(x), "") << x;
  EXPECT_TRUE(has(x, "<testsuites name=\"moeoracle compare\" tests=\"4\" failures=\"2\" errors=\"0\" skipped=\"1\"")) << x;
  EXPECT_EQ(count(x, "<testsuite "), 2u);  // one per op
  EXPECT_TRUE(has(x, "<testsuite name=\"rmsnorm\" tests=\"2\" failures=\"1\" errors=\"0\" skipped=\"0\"")) << x;
  EXPECT_TRUE(has(x, "<testsuite name=\"matvec_bf16\" tests=\"2\" failures=\"1\" errors=\"0\" skipped=\"1\"")) << x;
  EXPECT_EQ(count(x, "<testcase "), 4u);
  EXPECT_EQ(count(x, "<failure message="), 2u);
  EXPECT_EQ(count(x, "<skipped message=\"dim &lt;= 8192 (dim = 16384)\"/>"), 1u) << x;
  EXPECT_TRUE(has(x, "<testcase classname=\"compare.rmsnorm\" name=\"rmsnorm_f32 [A3B hidden] seed=7 sg=8\" "
                     "time=\"0.000500\"/>"))
      << x;
  EXPECT_TRUE(has(x, "reproduce: moeoracle compare --ops rmsnorm --seed 8 --shapes &apos;remainder 33&apos;")) << x;
  EXPECT_TRUE(has(x, "<failure message=\"guard region after &apos;y&apos; overwritten")) << x;
}

TEST(Report, JunitEscapes) {
  CaseResult c = make_case("a<b&c", "\"quoted\" <shape>", 3);
  c.error = "bad & worse: <x> \"y\" 'z'\x01";
  c.skipped = false;
  std::ostringstream os;
  write_junit(os, std::vector<CaseResult>{c});
  const std::string x = os.str();
  EXPECT_EQ(xml_problem(x), "") << x;
  EXPECT_TRUE(has(x, "<testsuite name=\"a&lt;b&amp;c\"")) << x;
  EXPECT_TRUE(has(x, "name=\"a&lt;b&amp;c_f32 [&quot;quoted&quot; &lt;shape&gt;] seed=3 sg=8\"")) << x;
  EXPECT_TRUE(has(x, "message=\"bad &amp; worse: &lt;x&gt; &quot;y&quot; &apos;z&apos;?\"")) << x;
  EXPECT_FALSE(has(x, "\x01"));
  EXPECT_EQ(xml_escape("<&>\"'"), "&lt;&amp;&gt;&quot;&apos;");
}

TEST(Report, SaveReportWritesOrNamesThePath) {
  const std::string dir = ::testing::TempDir();
  const std::string path = dir + "/moe_report_test.xml";
  save_report(path, ReportFormat::Junit, sample());
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_EQ(xml_problem(ss.str()), "");
  std::filesystem::remove(path);
  test::expect_error([] { save_report("/nonexistent-dir/r.json", ReportFormat::Json, sample()); },
                     "/nonexistent-dir/r.json: cannot write the JSON report: opening its directory /nonexistent-dir: "
                     "No such file or directory");
}

}  // namespace
}  // namespace moe::compare
