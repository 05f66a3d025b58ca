// judge's HTML report: one self-contained page, a row per tapped module and a cell per token
// coloured by error / bound, the first failure on top (oracle/judge.h write_judge_html).
#include <cmath>
#include <cstdio>
#include <sstream>

#include "oracle/html_escape.h"
#include "oracle/judge.h"

namespace moe {
namespace {

std::string esc(const std::string& s) { return html_escape(s); }

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", v);
  return b;
}

// The colour of a cell: judged within a quarter of its bound, within it, over it, not judged.
const char* cell_class(double err, double bound) {
  if (bound < 0) return "n";
  if (!(err <= bound)) return "f";
  return err <= 0.25 * bound ? "g" : "y";
}

}  // namespace

std::string judge_report_html(const JudgeReport& rep, const std::string& title) {
  std::ostringstream os;
  os << "<!doctype html><html><head><meta charset=\"utf-8\"><title>judge: " << esc(title) << "</title><style>"
     << "body{font:13px sans-serif;margin:16px}table{border-collapse:collapse}td,th{padding:2px 6px;"
     << "border:1px solid #ddd;white-space:nowrap}td.c{width:14px;padding:0}.g{background:#9d9}.y{background:#ed7}"
     << ".f{background:#e66}.n{background:#eee}.fail{color:#b00;font-weight:bold}</style></head><body>\n";
  os << "<h2>judge: " << esc(title) << "</h2>\n<p>" << rep.tokens << " tokens, storage " << storage_name(rep.storage)
     << ", bound = " << num(rep.multiple)
     << " x the honest f32 error on the engine's inputs + 1 ulp of the storage (docs/judge.md). Cells: green "
        "within a quarter of the bound, yellow within it, red over it, grey not judged.</p>\n";
  if (rep.first_failed >= 0) {
    const ModuleVerdict& f = rep.modules[size_t(rep.first_failed)];
    const size_t t = size_t(f.first_failed_token);
    os << "<p class=\"fail\">first failing module " << esc(f.tap) << " at token " << t << ": error " << num(f.err[t])
       << ", bound " << num(f.bound[t]) << "</p>\n";
  } else {
    os << "<p>every judged token of every module within its bound</p>\n";
  }
  os << "<table><tr><th>module (tap)</th><th>fed</th><th>failed</th><th>err/bound</th><th colspan=\"" << rep.tokens
     << "\">tokens</th><th>note</th></tr>\n";
  for (const ModuleVerdict& m : rep.modules) {
    os << "<tr><td" << (m.failed ? " class=\"fail\"" : "") << ">" << esc(m.tap) << "</td><td>" << (m.fed ? "yes" : "no")
       << "</td><td>" << m.failed << "/" << m.judged << "</td><td>" << num(m.worst_ratio) << "</td>";
    for (size_t t = 0; t < m.err.size(); ++t)
      os << "<td class=\"c " << cell_class(m.err[t], m.bound[t]) << "\" title=\"token " << t << ": error "
         << num(m.err[t]) << ", bound " << num(m.bound[t]) << "\"></td>";
    os << "<td>" << esc(m.note) << "</td></tr>\n";
  }
  os << "</table>\n";
  for (const std::string& n : rep.not_judged) os << "<p>not judged: " << esc(n) << "</p>\n";
  if (!rep.unmapped.empty()) os << "<p>" << rep.unmapped.size() << " engine tensors no rule of the map names</p>\n";
  os << "</body></html>\n";
  return os.str();
}

}  // namespace moe
