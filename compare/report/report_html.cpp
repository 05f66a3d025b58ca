// `moeoracle compare --html`: the op-level report as one self-contained page — the verdict, a
// table per op and kernel (passed / failed / skipped / worst budget used per output), histograms
// of error / bound per op, every failure's evidence with its reproduction command, and the skip
// reasons. Formatting only: statuses come from CaseResult.
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "compare/report/html_common.h"
#include "compare/report/report.h"

namespace moe::compare {
namespace {

const char* kScript = R"JS(
  var cases = D.cases, keys = [], by = {};
  cases.forEach(function (c) {
    var k = c.op + ' / ' + c.kernel;
    if (!by[k]) { by[k] = {op: c.op, kernel: c.kernel, pass: 0, fail: 0, differ: 0, skip: 0, worst: 0, budgets: [], skips: {}}; keys.push(k); }
    var a = by[k];
    if (c.status === 'SKIP') { a.skip++; a.skips[c.skip_reason] = (a.skips[c.skip_reason] || 0) + 1; return; }
    if (c.status === 'FAIL') a.fail++; else if (c.status === 'DIFFERS') a.differ++; else a.pass++;
    a.worst = Math.max(a.worst, c.worst); a.budgets.push(c.worst);
  });
  var t = document.getElementById('ops');
  var hdr = el('tr'); ['op', 'kernel', 'passed', 'failed', 'differ (declared)', 'skipped', 'worst budget used'].forEach(function (h) { hdr.appendChild(el('th', {}, h)); });
  t.appendChild(hdr);
  keys.forEach(function (k) {
    var a = by[k], tr = el('tr', {'class': a.fail ? 'bad' : (a.pass ? 'good' : 'unc')});
    [a.op, a.kernel, a.pass, a.fail, a.differ, a.skip, a.pass + a.fail ? (100 * a.worst).toPrecision(3) + ' %' : '-'].forEach(function (v) { tr.appendChild(el('td', {}, v)); });
    t.appendChild(tr);
  });
  var hist = document.getElementById('hist');
  keys.forEach(function (k) {
    var a = by[k];
    if (a.budgets.length) budget_hist(hist, k + ': error / bound', a.budgets);
  });
  var fl = document.getElementById('failures'), nf = 0;
  cases.forEach(function (c) {
    if ((c.status !== 'FAIL' && c.status !== 'DIFFERS') || ++nf > 300) return;
    var d = el('div', {'class': 'failure'});
    d.appendChild(el('h3', {}, c.op + ' / ' + c.kernel + ' [' + c.shape + '] seed ' + c.seed + ' subgroup ' + c.subgroup));
    if (c.difference) d.appendChild(el('p', {}, (c.status === 'DIFFERS' ? 'DIFFERS, declared difference: ' : 'declared difference not observed: ') + c.difference));
    (c.evidence || []).forEach(function (e) { d.appendChild(el('pre', {}, e)); });
    d.appendChild(el('pre', {'class': 'cmd'}, c.repro));
    fl.appendChild(d);
  });
  if (!nf) fl.appendChild(el('p', {}, 'No case failed.'));
  var ul = document.getElementById('skips'), any = false;
  keys.forEach(function (k) {
    for (var r in by[k].skips) { any = true; ul.appendChild(el('li', {}, k + ': ' + r + ' (' + by[k].skips[r] + ' cases)')); }
  });
  if (!any) ul.appendChild(el('li', {}, 'none'));
)JS";

}  // namespace

void write_html(std::ostream& os, std::span<const CaseResult> cases) {
  using nlohmann::json;
  json arr = json::array();
  for (const CaseResult& c : cases) {
    json o = {{"op", c.op},     {"kernel", c.kernel},     {"shape", c.shape},
              {"seed", c.seed}, {"subgroup", c.subgroup ? json(c.subgroup) : json("driver")},
              {"status", status_name(c.status())}};
    double worst = 0;
    for (const Verdict& v : c.outputs) worst = std::max(worst, std::isfinite(v.budget_used) ? v.budget_used : 1e9);
    o["worst"] = worst;
    if (c.skipped) o["skip_reason"] = c.skip_reason;
    if (!c.difference.empty()) o["difference"] = c.difference;
    if (c.status() == CaseResult::Status::Fail || c.status() == CaseResult::Status::Differs) {
      json ev = json::array();
      if (!c.error.empty()) ev.push_back("error: " + c.error);
      for (const Verdict& v : c.outputs)
        if (!v.pass) ev.push_back(v.output + ": " + v.reason);
      o["evidence"] = ev, o["repro"] = repro_command(c);
    }
    arr.push_back(std::move(o));
  }
  std::string data = json{{"cases", arr}}.dump();
  for (size_t p = 0; (p = data.find("</", p)) != std::string::npos; p += 3) data.replace(p, 2, "<\\/");
  const Summary s = summarize(cases);
  os << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>moeoracle compare</title><style>"
     << html::kStyle << "</style></head><body>\n<h1>moeoracle compare</h1>\n";
  os << "<h2 id=\"verdict\" class=\"" << (s.failed ? "bad" : "good") << "\">" << (s.failed ? "FAIL" : "PASS") << ": "
     << html::escape(summary_line(s)) << "</h2>\n";
  os << "<p>script: <span id=\"status\" class=\"unc\">not run (the tables need JavaScript)</span></p>\n";
  os << "<h2>Per op and kernel</h2><table id=\"ops\"></table>\n<h2>Error / bound per op</h2><div id=\"hist\"></div>\n"
     << "<h2>Failures</h2><div id=\"failures\"></div>\n<h2>Skipped</h2><ul id=\"skips\"></ul>\n";
  os << "<script type=\"application/json\" id=\"data\">" << data << "</script>\n<script>" << html::kScriptStart
     << kScript << html::kScriptEnd << "</script>\n</body></html>\n";
}

}  // namespace moe::compare
