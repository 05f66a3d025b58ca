// Reports of `moeoracle mutate` (mutate.h): kill statistics, console, JSON, HTML.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <ostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "compare/mutate/mutate.h"
#include "compare/report/html_common.h"
#include "core/check.h"

namespace moe::compare {

const char* mutant_status_name(MutantStatus s) {
  switch (s) {
    case MutantStatus::Killed: return "killed";
    case MutantStatus::Survived: return "survived";
    case MutantStatus::TimedOut: return "timed_out";
    case MutantStatus::Equivalent: return "equivalent";
    case MutantStatus::Identical: return "identical_spirv";
    case MutantStatus::Duplicate: return "duplicate_spirv";
    case MutantStatus::NotCompiled: return "not_compiled";
    case MutantStatus::NotRun: return "not_run";
  }
  return "?";
}

double KillStats::kill_rate() const {
  const int64_t run = judged();  // equivalents are neither kills nor misses
  return run == 0 ? 1.0 : double(killed + timed_out) / double(run);
}

std::map<std::string, KillStats> kill_stats(const MutateReport& r, bool by_rule) {
  std::map<std::string, KillStats> out;
  for (const MutantResult& m : r.mutants)
    for (const std::string& key : {by_rule ? m.mutant.rule : m.kernel, std::string("all")}) {
      KillStats& s = out[key];
      ++s.generated;
      switch (m.status) {
        case MutantStatus::Killed: ++s.killed; break;
        case MutantStatus::Survived: ++s.survived; break;
        case MutantStatus::TimedOut: ++s.timed_out; break;
        case MutantStatus::Equivalent: ++s.equivalent; break;
        case MutantStatus::Identical: ++s.identical; break;
        case MutantStatus::Duplicate: ++s.duplicate; break;
        case MutantStatus::NotCompiled: ++s.not_compiled; break;
        case MutantStatus::NotRun: ++s.not_run; break;
      }
    }
  return out;
}

namespace {

std::string pct(double r) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1) << 100.0 * r << "%";
  return os.str();
}

// The rate as printed: none where no mutant was judged (a 100 % of nothing would read as a pass).
std::string rate_text(const KillStats& s) { return s.judged() == 0 ? std::string("-") : pct(s.kill_rate()); }

// Kills per criterion of one kernel ("element 12, unwritten 3").
std::string criteria(const MutateReport& r, const std::string& kernel) {
  std::map<std::string, int> n;
  for (const MutantResult& m : r.mutants)
    if ((m.status == MutantStatus::Killed || m.status == MutantStatus::TimedOut) && (kernel == "all" || m.kernel == kernel))
      ++n[m.criterion];
  std::string s;
  for (const auto& [c, k] : n) s += (s.empty() ? "" : ", ") + c + " " + std::to_string(k);
  return s;
}

}  // namespace

void write_mutate_console(std::ostream& os, const MutateReport& r) {
  const auto stats = kill_stats(r);
  os << std::left << std::setw(28) << "kernel" << std::right << std::setw(6) << "made" << std::setw(7) << "same"
     << std::setw(6) << "n/c" << std::setw(7) << "killed" << std::setw(6) << "t/o" << std::setw(6) << "surv"
     << std::setw(6) << "equiv" << std::setw(8) << "rate" << "  killed by\n";
  for (const auto& [kernel, s] : stats) {
    if (kernel == "all") continue;
    os << std::left << std::setw(28) << kernel << std::right << std::setw(6) << s.generated << std::setw(7)
       << s.identical + s.duplicate << std::setw(6) << s.not_compiled << std::setw(7) << s.killed << std::setw(6)
       << s.timed_out << std::setw(6) << s.survived << std::setw(6) << s.equivalent << std::setw(8)
       << rate_text(s) << "  " << criteria(r, kernel) << "\n";
  }
  for (const MutantResult& m : r.mutants) {
    if (m.status == MutantStatus::Survived) {
      os << "\nSURVIVED " << m.kernel << " " << m.mutant.id() << " (" << m.cases << " cases passed, at most "
         << pct(m.max_budget) << " of a bound)\n" << m.mutant.diff
         << "\n";
    } else if (m.status == MutantStatus::Equivalent) {
      os << "\nEQUIVALENT " << m.kernel << " " << m.mutant.id() << ": " << m.why << "\n";
    }
  }
  for (const std::string& w : r.wrong_claims) os << "\nCLAIM DID NOT HOLD " << w << "\n";
  for (const std::string& k : r.no_source) os << "\nNOT MUTATED " << k << ": SPIR-V only, no GLSL source\n";
  for (const std::string& m : r.not_found)
    os << "\nNOT FOUND " << m << ": listed by --mutants, not generated (another source, or the kernel not selected)\n";
  for (const std::string& u : r.baseline_fails) os << "\nNOT JUDGED " << u << "\n";
  for (const std::string& u : r.no_cases)
    os << "\nNOT JUDGED " << u << ": no case of the selected shapes runs its kernels (try --shapes all); its mutants are counted as not run\n";
  if (stats.count("all")) {
    const KillStats& a = stats.at("all");
    os << "\n" << a.generated << " mutants: " << a.killed + a.timed_out << " killed (" << a.timed_out
       << " by timeout), " << a.survived << " survived, " << a.equivalent << " equivalent (argued), "
       << a.identical + a.duplicate << " equal SPIR-V (dropped), " << a.not_compiled
       << " did not compile; kill rate " << rate_text(a) << " of non-equivalent mutants (unmutated kernels passed "
       << r.baseline_cases << " cases)\n";
    if (r.interrupted)
      os << "INTERRUPTED: " << a.not_run << " mutants not run; the figures above cover the finished ones\n";
    else if (a.not_run)
      os << "NOT JUDGED: " << a.not_run << " mutants (units whose baseline fails or that no case runs, or that change only kernels no case runs)\n";
  }
}

void write_mutate_json(std::ostream& os, const MutateReport& r) {
  using nlohmann::json;
  json mutants = json::array();
  for (const MutantResult& m : r.mutants)
    mutants.push_back({{"kernel", m.kernel},        {"id", m.mutant.id()},        {"rule", m.mutant.rule},
                       {"line", m.mutant.line},     {"column", m.mutant.column},  {"before", m.mutant.before},
                       {"after", m.mutant.after},   {"diff", m.mutant.diff},      {"status", mutant_status_name(m.status)},
                       {"criterion", m.criterion},  {"evidence", m.evidence},     {"why", m.why},
                       {"cases", m.cases}, {"max_budget", m.max_budget}, {"min_subgroup", m.min_subgroup},
                       {"max_subgroup", m.max_subgroup}});
  json kernels = json::object();
  for (const auto& [k, s] : kill_stats(r))
    kernels[k] = {{"generated", s.generated}, {"identical", s.identical}, {"duplicate", s.duplicate},
                  {"not_compiled", s.not_compiled}, {"killed", s.killed}, {"timed_out", s.timed_out},
                  {"survived", s.survived}, {"equivalent", s.equivalent}, {"not_run", s.not_run},
                  {"kill_rate", s.kill_rate()}};
  json rules = json::object();
  for (const auto& [k, s] : kill_stats(r, true))
    rules[k] = {{"generated", s.generated}, {"killed", s.killed + s.timed_out}, {"survived", s.survived},
                {"equivalent", s.equivalent}, {"kill_rate", s.kill_rate()}};
  os << json{{"kernels", kernels},          {"rules", rules},        {"mutants", mutants},
             {"wrong_claims", r.wrong_claims}, {"no_source", r.no_source}, {"not_found", r.not_found}, {"no_cases", r.no_cases}, {"baseline_fails", r.baseline_fails}, {"interrupted", r.interrupted},
             {"baseline_cases", r.baseline_cases}, {"baseline_units", r.baseline_units}, {"bundled", r.bundled},
             {"shard", r.shard}}
            .dump(1)
     << "\n";
}

MutateReport read_mutate_json(const std::string& path) {
  using nlohmann::json;
  std::ifstream f(path, std::ios::binary);
  MOE_CHECK(f, "mutate --rescore: cannot read '" << path << "'");
  json j;
  try {
    j = json::parse(f);
  } catch (const json::exception& e) {
    MOE_FAIL("mutate --rescore: '" << path << "': malformed JSON: " << e.what());
  }
  MOE_CHECK(j.is_object() && j.contains("mutants") && j["mutants"].is_array(),
            "mutate --rescore: '" << path << "': not a mutate JSON report (no \"mutants\" array)");
  static const MutantStatus kAll[] = {MutantStatus::Killed,    MutantStatus::Survived,  MutantStatus::TimedOut,
                                      MutantStatus::Equivalent, MutantStatus::Identical, MutantStatus::Duplicate,
                                      MutantStatus::NotCompiled, MutantStatus::NotRun};
  MutateReport r;
  for (const json& m : j["mutants"]) {
    MutantResult mr;
    try {
      mr.kernel = m.at("kernel"), mr.mutant.rule = m.at("rule"), mr.mutant.line = m.at("line");
      mr.mutant.column = m.at("column"), mr.mutant.before = m.at("before"), mr.mutant.after = m.at("after");
      mr.mutant.diff = m.at("diff"), mr.criterion = m.at("criterion"), mr.evidence = m.at("evidence");
      mr.why = m.at("why"), mr.cases = m.at("cases"), mr.max_budget = m.at("max_budget");
      mr.min_subgroup = m.value("min_subgroup", 0u), mr.max_subgroup = m.value("max_subgroup", 0u);
      const std::string status = m.at("status");
      const auto* it = std::find_if(std::begin(kAll), std::end(kAll),
                                    [&](MutantStatus st) { return status == mutant_status_name(st); });
      MOE_CHECK(it != std::end(kAll), "unknown status \"" << status << "\"");
      mr.status = *it;
    } catch (const json::exception& e) {
      MOE_FAIL("mutate --rescore: '" << path << "': a mutant lacks a field: " << e.what() << " in " << m.dump().substr(0, 200));
    } catch (const Error& e) {
      MOE_FAIL("mutate --rescore: '" << path << "': " << e.what() << " in " << m.dump().substr(0, 200));
    }
    r.mutants.push_back(std::move(mr));
  }
  // The claims are scored again, so the claims that did not hold before are not read back.
  for (auto [key, list] : {std::pair{"no_source", &r.no_source}, std::pair{"not_found", &r.not_found},
                           std::pair{"no_cases", &r.no_cases}, std::pair{"baseline_fails", &r.baseline_fails}})
    if (j.contains(key)) *list = j[key].get<std::vector<std::string>>();
  r.baseline_cases = j.value("baseline_cases", int64_t{0});
  if (j.contains("baseline_units")) r.baseline_units = j["baseline_units"].get<std::map<std::string, int64_t>>();
  r.interrupted = j.value("interrupted", false);
  r.bundled = j.value("bundled", false);
  r.shard = j.value("shard", std::string());
  return r;
}

namespace {

void rate_table(std::ostream& os, const char* title, const std::map<std::string, KillStats>& stats) {
  os << "<h2>" << title << "</h2>\n<table><tr><th></th><th>run</th><th>killed</th><th>survived</th><th>equivalent</th>"
        "<th>kill rate</th><th></th></tr>\n";
  for (const auto& [k, s] : stats) {
    const double rate = s.kill_rate();
    os << "<tr><td>" << html::escape(k) << "</td><td>" << s.killed + s.timed_out + s.survived + s.equivalent
       << "</td><td>" << s.killed + s.timed_out << "</td><td>" << s.survived << "</td><td>" << s.equivalent
       << "</td><td>" << pct(rate) << "</td><td><div class=\"bar\"><div style=\"width:" << int(rate * 200)
       << "px;background:" << (rate >= 0.95 ? "#2ca02c" : "#d62728") << "\"></div></div></td></tr>\n";
  }
  os << "</table>\n";
}

}  // namespace

void write_mutate_html(std::ostream& os, const MutateReport& r) {
  os << "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>moeoracle mutate</title><style>" << html::kStyle
     << ".bar{width:200px;height:10px;background:#eee}.bar div{height:10px}pre{background:#f6f6f6;padding:4px}"
     << "</style></head><body>\n<h1>Mutation testing</h1>\n";
  rate_table(os, "Kill rate per kernel", kill_stats(r));
  rate_table(os, "Kill rate per rule", kill_stats(r, true));
  os << "<h2>Survivors</h2>\n";
  for (const MutantResult& m : r.mutants)
    if (m.status == MutantStatus::Survived)
      os << "<p><b>" << html::escape(m.kernel) << "</b> " << html::escape(m.mutant.id()) << "</p><pre>"
         << html::escape(m.mutant.diff) << "</pre>\n";
  os << "<h2>Equivalent mutants (argued)</h2>\n<ul>\n";
  for (const MutantResult& m : r.mutants)
    if (m.status == MutantStatus::Equivalent)
      os << "<li><b>" << html::escape(m.kernel) << "</b> " << html::escape(m.mutant.id()) << ": " << html::escape(m.why)
         << "</li>\n";
  os << "</ul>\n</body></html>\n";
}

}  // namespace moe::compare
