// Report writers (contract in report.h). Formatting only: statuses come from CaseResult.
#include "compare/report/report.h"

#include <cmath>
#include <iomanip>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/check.h"
#include "oracle/atomic_file.h"

namespace moe::compare {
namespace {

std::string num(double v, int digits = 6) {
  std::ostringstream os;
  os << std::setprecision(digits) << v;
  return os.str();
}

std::string pct(double r) {
  if (!std::isfinite(r)) return "inf%";
  std::ostringstream os;
  os << std::fixed << std::setprecision(r < 0.1 ? 2 : 0) << 100.0 * r << '%';
  return os.str();
}

// POSIX shell quoting: bare when only safe characters, else single quotes ('\'' for a quote).
std::string shell_quote(const std::string& s) {
  const bool safe = !s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                      "0123456789_-./:=,+@%") == std::string::npos;
  if (safe) return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Evidence lines of a failing case: the error, then each failing output's reason.
std::vector<std::string> evidence(const CaseResult& c) {
  std::vector<std::string> lines;
  if (!c.error.empty()) lines.push_back(c.error);
  if (c.outputs.empty() && c.error.empty()) lines.push_back("no output was compared");
  for (const Verdict& v : c.outputs)
    if (!v.pass) lines.push_back(v.reason);
  return lines;
}

// A JSON number, or null where JSON has none (inf, NaN).
nlohmann::json jnum(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

nlohmann::json verdict_json(const Verdict& v) {
  static const std::pair<uint32_t, const char*> kNames[] = {
      {kUnwritten, "unwritten"}, {kSpecial, "nan_inf"},     {kElement, "element"},   {kCosine, "cosine"},
      {kNormRatio, "norm_ratio"}, {kMaxAbs, "max_abs_rel"}, {kIndexSet, "index_set"}};
  nlohmann::json failed = nlohmann::json::array();
  for (auto [bit, name] : kNames)
    if (v.failed & bit) failed.push_back(name);
  return {{"name", v.output},
          {"kind", kind_name(v.kind)},
          {"pass", v.pass},
          {"warn", v.warn},
          {"failed", failed},
          {"reason", v.reason},
          {"worst_index", v.worst_index},
          {"expected", jnum(v.expected)},
          {"found", jnum(v.found)},
          {"bound", jnum(v.bound)},
          {"budget_used", jnum(v.budget_used)},
          {"cosine", jnum(v.cosine)},
          {"cosine_min", jnum(v.cosine_min)},
          {"norm_ratio", jnum(v.norm_ratio)},
          {"norm_ratio_tol", jnum(v.norm_ratio_tol)},
          {"max_abs_rel", jnum(v.max_abs_rel)},
          {"max_abs_rel_limit", jnum(v.max_abs_rel_limit)},
          {"max_ulp", jnum(v.max_ulp)},
          {"compared", v.compared},
          {"over_budget", v.over_budget},
          {"nan_found", v.nan_found},
          {"nan_missing", v.nan_missing},
          {"inf_mismatch", v.inf_mismatch},
          {"unwritten", v.unwritten},
          {"near_ties", v.near_ties}};
}

// XML 1.0 allows tab, LF, CR and code points >= 0x20; other control bytes cannot appear even
// escaped, so they become '?'. Bytes >= 0x80 pass through (UTF-8 text stays UTF-8).
bool xml_allowed(unsigned char c) { return c >= 0x20 || c == '\t' || c == '\n' || c == '\r'; }

// JUnit time attributes: fixed-point seconds (some CI parsers reject exponent notation).
std::string secs(double s) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(6) << s;
  return os.str();
}

// 0: the pipeline was not pinned to a size, the driver chose it.
std::string subgroup_label(uint32_t subgroup) { return subgroup ? std::to_string(subgroup) : "driver"; }

std::string testcase_name(const CaseResult& c) {
  std::ostringstream os;
  os << c.kernel << " [" << c.shape << "] seed=" << c.seed << " sg=" << subgroup_label(c.subgroup);
  return os.str();
}

}  // namespace

// The one error a declared difference may cover: an out-of-range index (the access checks' "index
// into ..."; an engine may rely on robustBufferAccess), never a crash, a hang, a race, a bad
// shift or a pipeline error.
static bool declarable_error(const std::string& error) {
  return error.starts_with("out-of-range access") && error.find("index into") != std::string::npos &&
         error.find("data race") == std::string::npos;
}

CaseResult::Status CaseResult::status() const {
  if (skipped) return Status::Skip;
  if (!error.empty()) return !difference.empty() && declarable_error(error) ? Status::Differs : Status::Fail;
  if (outputs.empty()) return Status::Fail;
  for (const Verdict& v : outputs)
    if (!v.pass) return difference.empty() ? Status::Fail : Status::Differs;
  return Status::Pass;
}

bool CaseResult::warn() const {
  if (status() != Status::Pass) return false;
  for (const Verdict& v : outputs)
    if (v.warn) return true;
  return false;
}

const char* status_name(CaseResult::Status s) {
  switch (s) {
    case CaseResult::Status::Pass: return "PASS";
    case CaseResult::Status::Fail: return "FAIL";
    case CaseResult::Status::Skip: return "SKIP";
    case CaseResult::Status::Differs: return "DIFFERS";
  }
  return "?";
}

Summary summarize(std::span<const CaseResult> cases) {
  Summary s;
  for (const CaseResult& c : cases) {
    switch (c.status()) {
      case CaseResult::Status::Pass: ++s.passed; break;
      case CaseResult::Status::Fail: ++s.failed; break;
      case CaseResult::Status::Skip: ++s.skipped; break;
      case CaseResult::Status::Differs: ++s.differ; break;
    }
    if (c.warn()) ++s.warned;
    if (!c.skipped && !c.difference.empty()) ++s.declared;
  }
  return s;
}

std::string summary_line(const Summary& s) {
  std::ostringstream os;
  os << s.passed << " passed, " << s.failed << " failed, " << s.skipped << " skipped";
  if (s.warned) os << ", " << s.warned << " near the budget";
  if (s.declared)
    os << ", " << s.differ << " differ as declared, " << s.declared - s.differ << " under a declared difference passed";
  return os.str();
}

std::string repro_command(const CaseResult& c) {
  std::ostringstream os;
  if (!c.case_file.empty()) {
    os << "moeoracle compare --case " << shell_quote(c.case_file) << " --subgroup " << c.subgroup;
    if (!c.manifest.empty()) os << " --kernels " << shell_quote(c.manifest);
    return os.str();
  }
  os << "moeoracle compare --ops " << shell_quote(c.op);
  // A line about a whole plan (its worker could not start, or died too often) has no case: rerun the op.
  if (!c.shape.empty()) os << " --seed " << c.seed << " --shapes " << shell_quote(c.shape) << " --subgroup " << c.subgroup;
  if (!c.manifest.empty()) os << " --kernels " << shell_quote(c.manifest);
  return os.str();
}

std::string case_line(const CaseResult& c) {
  std::ostringstream os;
  const CaseResult::Status st = c.status();
  os << (c.warn() ? "WARN" : status_name(st)) << "  " << c.op << "  " << c.kernel << "  [" << c.shape
     << "]  seed=" << c.seed << " sg=" << subgroup_label(c.subgroup);
  if (st == CaseResult::Status::Skip) {
    os << "  skipped: " << c.skip_reason;
    return os.str();
  }
  if (!c.difference.empty())
    os << "  " << (st == CaseResult::Status::Differs ? "declared difference: " : "declared difference not observed: ")
       << c.difference;
  // Budget used per output: the one number that says how close a pass was. Outputs of a
  // multi-step case ("S@t=3") are shown once per tensor: the worst step, or FAIL with the count.
  std::vector<std::string> names;
  std::map<std::string, std::pair<double, int>> worst;  // name -> (max budget used, failures)
  for (const Verdict& v : c.outputs) {
    const std::string base = v.output.substr(0, v.output.find('@'));
    if (!worst.count(base)) names.push_back(base), worst[base] = {0.0, 0};
    auto& w = worst[base];
    w.first = std::max(w.first, v.budget_used);
    if (!v.pass) ++w.second;
  }
  for (const std::string& n : names) {
    const auto& w = worst[n];
    os << "  " << n << ' ';
    if (w.second == 0)
      os << pct(w.first);
    else if (w.second == 1)
      os << "FAIL";
    else
      os << "FAIL x" << w.second;
  }
  if (c.gpu_ms >= 0) {
    os << "  " << num(c.gpu_ms, 4) << " ms";
    if (c.gpu_ms > 0 && c.bytes > 0) os << ' ' << num(c.bytes / (c.gpu_ms * 1e6), 4) << " GB/s";
    if (c.gpu_ms > 0 && c.flops > 0) os << ' ' << num(c.flops / (c.gpu_ms * 1e6), 4) << " GFLOP/s";
    if (c.timing.runs > 0) os << " cold, " << num(c.timing.warm, 4) << " ms warm";
    if (c.timing.stream > 0) os << ", " << num(c.timing.stream, 4) << " ms stream";
  }
  if (!c.params.empty()) os << "  " << c.params;
  return os.str();
}

void write_console(std::ostream& os, std::span<const CaseResult> cases) {
  for (const CaseResult& c : cases) {
    os << case_line(c) << '\n';
    if (c.warn()) {
      // Near the budget: show how near, and how to rerun it (style rule 8).
      for (const Verdict& v : c.outputs)
        if (v.warn) os << "      " << v.reason << '\n';
      os << "      reproduce: " << repro_command(c) << '\n';
    }
    if (c.status() != CaseResult::Status::Fail && c.status() != CaseResult::Status::Differs) continue;
    for (const std::string& line : evidence(c)) os << "      " << line << '\n';
    os << "      reproduce: " << repro_command(c) << '\n';
  }
  os << summary_line(summarize(cases)) << '\n';
}

namespace {

// One (op, kernel, shape) of write_perf: its cases' figures.
struct PerfAgg {
  std::vector<double> ms, warm, stream;
  double lo = 0, hi = 0, stream_lo = 0, stream_hi = 0, bytes = 0, flops = 0;
  bool system_memory = false, stream_cold = true;
  int stream_copies = 64;  // the fewest of any case
  void add(const CaseResult& c) {
    const bool first = ms.empty();
    ms.push_back(c.gpu_ms), bytes = c.bytes, flops = c.flops;
    system_memory = system_memory || c.system_memory;
    if (c.timing.runs == 0) return;
    warm.push_back(c.timing.warm);
    lo = first ? c.timing.cold_lo : std::min(lo, c.timing.cold_lo);
    hi = first ? c.timing.cold_hi : std::max(hi, c.timing.cold_hi);
    if (c.timing.stream <= 0) return;
    stream_lo = stream.empty() ? c.timing.stream_lo : std::min(stream_lo, c.timing.stream_lo);
    stream_hi = stream.empty() ? c.timing.stream_hi : std::max(stream_hi, c.timing.stream_hi);
    stream.push_back(c.timing.stream);
    stream_cold = stream_cold && c.timing.stream_cold;
    stream_copies = std::min(stream_copies, c.timing.stream_copies);
  }
};

void write_perf_legend(std::ostream& os, bool flush_read, double copy_gbs, double fma_gflops, bool same, bool stream) {
  os << "\nperf: per case, the median of 5-25 runs in one submission, each cold run after a cache flush (a "
     << (flush_read ? "read" : "fill")
     << " of a buffer\nlarger than the last-level cache: inputs come from memory), the warm runs back to back after "
        "them;\nper line, the median over seeds and subgroup sizes, [fastest, slowest] cold run of any of them";
  if (stream)
    os << ";\n\"stream\": the case as a decode runs it, back to back behind barriers over K copies of its inputs\n"
          "(each copy's inputs evicted by the others' unless marked \"partly warm\"), timed around a batch of\n"
          "K runs, per run: no timestamp or idle GPU between runs (median of 3-25 batches, [fastest, slowest])";
  if (copy_gbs > 0) os << ";\ndevice copy bandwidth " << num(copy_gbs, 4) << " GB/s, measured by a copy kernel";
  if (fma_gflops > 0) os << ";\ndevice f32 FMA peak " << num(fma_gflops, 4) << " GFLOP/s, measured by a kernel of fma chains";
  if (same)
    os << ";\n\"same-size\": a copy kernel moving the case's bytes, timed the same way (the ceiling of a kernel\n"
          "of that size, launch included)";
  os << "\n";
}

}  // namespace

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void write_perf(std::ostream& os, std::span<const CaseResult> cases, bool flush_read, double copy_gbs, double fma_gflops,
                const std::map<double, SameSizeCopy>& same_copy) {
  std::vector<std::string> order;
  std::map<std::string, PerfAgg> by;
  for (const CaseResult& c : cases) {
    if (c.skipped || c.gpu_ms <= 0) continue;
    const std::string key = c.op + "  " + c.kernel + "  [" + c.shape + "]";
    if (!by.count(key)) order.push_back(key);
    by[key].add(c);
  }
  const bool any_stream = std::any_of(cases.begin(), cases.end(), [](const CaseResult& c) { return c.timing.stream > 0; });
  write_perf_legend(os, flush_read, copy_gbs, fma_gflops, !same_copy.empty(), any_stream);
  // kind: 0 cold, 1 warm, 2 stream (the same-size copy's figure of that kind, where there is one)
  const auto rate = [&](double ms, double bytes, int kind) {
    std::ostringstream r;
    const double gbs = bytes / (ms * 1e6);
    r << num(ms, 4) << " ms " << num(gbs, 4) << " GB/s";
    if (copy_gbs > 0) r << " (" << num(100 * gbs / copy_gbs, 3) << "% of copy";
    const auto same = same_copy.find(bytes);
    const double same_ms = same == same_copy.end() ? 0 : kind == 0 ? same->second.cold : kind == 2 ? same->second.stream : 0;
    if (copy_gbs > 0 && same_ms > 0) r << ", " << num(100 * same_ms / ms, 3) << "% of same-size";
    if (copy_gbs > 0) r << ")";
    return r.str();
  };
  for (const std::string& key : order) {
    PerfAgg& a = by[key];
    const double ms = median_of(a.ms);
    os << "  " << key << "  " << (a.warm.empty() ? "" : "cold ") << rate(ms, a.bytes, 0);
    if (!a.warm.empty())
      os << " [" << num(a.lo, 4) << ", " << num(a.hi, 4) << "]  warm " << rate(median_of(a.warm), a.bytes, 1);
    if (!a.stream.empty()) {
      os << "  stream " << rate(median_of(a.stream), a.bytes, 2) << " [" << num(a.stream_lo, 4) << ", "
         << num(a.stream_hi, 4) << "] K " << a.stream_copies;
      if (!a.stream_cold) os << " (partly warm)";
    }
    if (a.flops > 0) {
      os << "  " << num(a.flops / (ms * 1e6), 4) << " GFLOP/s";
      if (fma_gflops > 0) os << " (" << num(100 * a.flops / (ms * 1e6) / fma_gflops, 3) << "% of FMA peak)";
    }
    if (a.system_memory) os << "  [some buffers in system memory: timed over PCIe]";
    os << '\n';
  }
}

void write_json(std::ostream& os, std::span<const CaseResult> cases) {
  const Summary s = summarize(cases);
  nlohmann::json j;
  j["summary"] = {{"passed", s.passed},   {"failed", s.failed},     {"skipped", s.skipped},
                  {"warned", s.warned},   {"differ", s.differ},     {"declared", s.declared}};
  nlohmann::json arr = nlohmann::json::array();
  for (const CaseResult& c : cases) {
    nlohmann::json outs = nlohmann::json::array();
    for (const Verdict& v : c.outputs) outs.push_back(verdict_json(v));
    const auto stream_ms = [&](double v) { return c.timing.stream > 0 ? jnum(v) : nlohmann::json(nullptr); };
    arr.push_back({{"op", c.op},
                   {"kernel", c.kernel},
                   {"manifest", c.manifest},
                   {"params", c.params},
                   {"shape", c.shape},
                   {"seed", c.seed},
                   {"subgroup", c.subgroup},
                   {"subgroup_pinned", c.subgroup != 0},  // false: the driver chose the size
                   {"status", status_name(c.status())},
                   {"warn", c.warn()},
                   {"skip_reason", c.skip_reason},
                   {"difference", c.difference},
                   {"error", c.error},
                   {"gpu_ms", c.gpu_ms >= 0 ? jnum(c.gpu_ms) : nlohmann::json(nullptr)},
                   {"timing", c.timing.runs == 0 ? nlohmann::json(nullptr)
                                                 : nlohmann::json{{"runs", c.timing.runs},
                                                                  {"cold_median_ms", jnum(c.gpu_ms)},
                                                                  {"cold_min_ms", jnum(c.timing.cold_lo)},
                                                                  {"cold_max_ms", jnum(c.timing.cold_hi)},
                                                                  {"warm_median_ms", jnum(c.timing.warm)},
                                                                  {"warm_min_ms", jnum(c.timing.warm_lo)},
                                                                  {"warm_max_ms", jnum(c.timing.warm_hi)},
                                                                  {"stream_median_ms", stream_ms(c.timing.stream)},
                                                                  {"stream_min_ms", stream_ms(c.timing.stream_lo)},
                                                                  {"stream_max_ms", stream_ms(c.timing.stream_hi)},
                                                                  {"stream_copies", c.timing.stream_copies},
                                                                  {"stream_cold", c.timing.stream_cold}}},
                   {"bytes", c.bytes},
                   {"flops", c.flops},
                   {"repro", repro_command(c)},
                   {"outputs", outs}});
  }
  j["cases"] = arr;
  os << j.dump(2) << '\n';
}

std::string xml_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += xml_allowed(c) ? ch : '?';
    }
  }
  return out;
}

void write_junit(std::ostream& os, std::span<const CaseResult> cases) {
  // Group by op, keeping the order in which ops first appear.
  std::vector<std::string> ops;
  std::map<std::string, std::vector<const CaseResult*>> by_op;
  for (const CaseResult& c : cases) {
    if (!by_op.count(c.op)) ops.push_back(c.op);
    by_op[c.op].push_back(&c);
  }
  auto seconds = [](const CaseResult& c) { return c.gpu_ms > 0 ? c.gpu_ms / 1000.0 : 0.0; };
  const Summary total = summarize(cases);
  double total_s = 0;
  for (const CaseResult& c : cases) total_s += seconds(c);
  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  os << "<testsuites name=\"moeoracle compare\" tests=\"" << cases.size() << "\" failures=\"" << total.failed
     << "\" errors=\"0\" skipped=\"" << total.skipped << "\" time=\"" << secs(total_s) << "\">\n";
  for (const std::string& op : ops) {
    const auto& list = by_op[op];
    Summary s;
    double suite_s = 0;
    for (const CaseResult* c : list) {
      s.failed += c->status() == CaseResult::Status::Fail;
      s.skipped += c->status() == CaseResult::Status::Skip;
      suite_s += seconds(*c);
    }
    os << "  <testsuite name=\"" << xml_escape(op) << "\" tests=\"" << list.size() << "\" failures=\"" << s.failed
       << "\" errors=\"0\" skipped=\"" << s.skipped << "\" time=\"" << secs(suite_s) << "\">\n";
    for (const CaseResult* c : list) {
      os << "    <testcase classname=\"compare." << xml_escape(op) << "\" name=\"" << xml_escape(testcase_name(*c))
         << "\" time=\"" << secs(seconds(*c)) << "\"";
      switch (c->status()) {
        case CaseResult::Status::Pass:
          if (!c->warn()) {
            os << "/>\n";
            break;
          }
          os << ">\n      <system-out>";  // a pass near its budget: the evidence, for whoever looks
          for (const Verdict& v : c->outputs)
            if (v.warn) os << xml_escape(v.reason) << '\n';
          os << "</system-out>\n    </testcase>\n";
          break;
        case CaseResult::Status::Skip:
          os << ">\n      <skipped message=\"" << xml_escape(c->skip_reason) << "\"/>\n    </testcase>\n";
          break;
        case CaseResult::Status::Differs: {
          // Not a failure (the difference is declared), never silent: the why and the evidence.
          os << ">\n      <system-out>declared difference: " << xml_escape(c->difference) << '\n';
          for (const std::string& line : evidence(*c)) os << xml_escape(line) << '\n';
          os << "reproduce: " << xml_escape(repro_command(*c)) << "</system-out>\n    </testcase>\n";
          break;
        }
        case CaseResult::Status::Fail: {
          const std::vector<std::string> lines = evidence(*c);
          os << ">\n      <failure message=\"" << xml_escape(lines.front()) << "\" type=\"mismatch\">";
          for (const std::string& line : lines) os << xml_escape(line) << '\n';
          os << "params: " << xml_escape(c->params) << '\n';
          os << "reproduce: " << xml_escape(repro_command(*c)) << "</failure>\n    </testcase>\n";
          break;
        }
      }
    }
    os << "  </testsuite>\n";
  }
  os << "</testsuites>\n";
}

void save_report(const std::string& path, ReportFormat format, std::span<const CaseResult> cases) {
  const char* what = "the JUnit report";
  if (format == ReportFormat::Json) what = "the JSON report";
  if (format == ReportFormat::Html) what = "the HTML report";
  write_stream_atomic(path, what, [&](std::ostream& os) {
    if (format == ReportFormat::Json)
      write_json(os, cases);
    else if (format == ReportFormat::Html)
      write_html(os, cases);
    else
      write_junit(os, cases);
  });
}

}  // namespace moe::compare
