#include "compare/model/html_report.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "compare/report/html_common.h"
#include "core/check.h"
#include "oracle/atomic_file.h"

namespace moe::compare {
namespace {
using nlohmann::json;

double finite_or(double v, double alt) { return std::isfinite(v) ? v : alt; }

json to_json(const ModelCompareResult& r, bool compact) {
  json j;
  j["meta"] = {{"model", r.model},   {"kernels", r.kernels}, {"device", r.device},      {"mode", r.mode},
               {"tokens", r.tokens}, {"passed", r.passed},   {"failed", r.failed},      {"uncovered", r.uncovered},
               {"first_failure", r.first_failure},           {"case_file", r.case_file}};
  json recs = json::array();
  for (const OpRecord& rec : r.records) {
    json o = {{"where", rec.where}, {"layer", rec.layer}, {"token", rec.token}, {"tokens", rec.tokens},
              {"op", rec.op},       {"covered", rec.covered}};
    if (!rec.covered) {
      o["note"] = rec.note;
    } else {
      const CaseResult& c = rec.result;
      const CaseResult::Status st = c.status();
      o["kernel"] = c.kernel, o["status"] = status_name(st);
      double worst = 0;
      for (const Verdict& v : c.outputs) worst = std::max(worst, finite_or(v.budget_used, 1e9));
      o["worst"] = worst;
      if (!compact || st == CaseResult::Status::Fail) {
        json outs = json::array();
        for (const Verdict& v : c.outputs)
          outs.push_back({{"name", v.output},
                          {"pass", v.pass},
                          {"budget", finite_or(v.budget_used, 1e9)},
                          {"reason", v.reason},
                          {"index", v.worst_index},
                          {"expected", finite_or(v.expected, 0)},
                          {"found", finite_or(v.found, 0)}});
        o["outputs"] = outs;
        if (!c.error.empty()) o["error"] = c.error;
      }
    }
    recs.push_back(std::move(o));
  }
  j["records"] = std::move(recs);
  json drift = json::array();
  for (const TapDrift& d : r.drift) {
    json rel = json::array(), cos = json::array();
    for (double v : d.rel) rel.push_back(finite_or(v, 1e9));
    for (double v : d.cosine) cos.push_back(finite_or(v, -1));
    drift.push_back({{"tap", d.tap}, {"layer", d.layer}, {"rel", rel}, {"cos", cos}});
  }
  j["drift"] = std::move(drift);
  return j;
}

// The page's script: tables and SVG plots from the embedded data. Plain DOM, no libraries.
const char* kScript = R"JS(
  var recs = D.records, ops = [], byOp = {}, layers = {};
  recs.forEach(function (r) {
    if (!byOp[r.op]) { byOp[r.op] = {pass: 0, fail: 0, unc: 0, worst: 0, budgets: []}; ops.push(r.op); }
    var a = byOp[r.op];
    if (!r.covered) { a.unc++; return; }
    if (r.status === 'FAIL') a.fail++; else a.pass++;
    a.worst = Math.max(a.worst, r.worst); a.budgets.push(r.worst);
    layers[r.layer] = true;
  });
  // Per-op table.
  var t = document.getElementById('ops');
  var hdr = el('tr'); ['op', 'passed', 'failed', 'uncovered', 'worst budget used'].forEach(function (h) { hdr.appendChild(el('th', {}, h)); });
  t.appendChild(hdr);
  ops.forEach(function (op) {
    var a = byOp[op], tr = el('tr', {'class': a.fail ? 'bad' : (a.pass ? 'good' : 'unc')});
    [op, a.pass, a.fail, a.unc, a.pass + a.fail ? (100 * a.worst).toPrecision(3) + ' %' : '-'].forEach(function (v) { tr.appendChild(el('td', {}, v)); });
    t.appendChild(tr);
  });
  // Per-layer table: failed/total per op.
  var lt = document.getElementById('layers'), ls = Object.keys(layers).map(Number).sort(function (a, b) { return a - b; });
  var h2 = el('tr'); h2.appendChild(el('th', {}, 'layer'));
  ops.forEach(function (op) { h2.appendChild(el('th', {}, op)); });
  lt.appendChild(h2);
  ls.forEach(function (L) {
    var tr = el('tr'); tr.appendChild(el('td', {}, L < 0 ? 'outside layers' : L));
    ops.forEach(function (op) {
      var n = 0, f = 0;
      recs.forEach(function (r) { if (r.op === op && r.layer === L && r.covered) { ++n; if (r.status === 'FAIL') ++f; } });
      tr.appendChild(el('td', {'class': n ? (f ? 'bad' : 'good') : 'unc'}, n ? (f ? f + ' / ' + n + ' failed' : n + ' passed') : '-'));
    });
    lt.appendChild(tr);
  });
  // Budget used against layer, one line per op (worst over tokens).
  var series = [];
  ops.forEach(function (op) {
    var xs = [], ys = [];
    ls.forEach(function (L) {
      var w = -1;
      recs.forEach(function (r) { if (r.op === op && r.layer === L && r.covered) w = Math.max(w, r.worst); });
      if (w >= 0) { xs.push(L); ys.push(w); }
    });
    if (xs.length) series.push({name: op, xs: xs, ys: ys});
  });
  var pl = document.getElementById('plots');
  plot(pl, 'error / bound (worst token) against layer', series, {log: true, hline: 1, xlabel: 'layer (-1: embedding, final norm, lm_head)', ylabel: 'budget used'});
  // Budget used against token for each op (worst layer).
  var tseries = [];
  ops.forEach(function (op) {
    var by = {};
    recs.forEach(function (r) { if (r.op === op && r.covered) by[r.token] = Math.max(by[r.token] || 0, r.worst); });
    var ks = Object.keys(by).map(Number).sort(function (a, b) { return a - b; });
    if (ks.length) tseries.push({name: op, xs: ks, ys: ks.map(function (k) { return by[k]; })});
  });
  plot(pl, 'error / bound (worst layer) against token', tseries, {log: true, hline: 1, xlabel: 'token', ylabel: 'budget used'});
  // Free mode: drift per tap against layer and against token.
  if (D.drift.length) {
    var kinds = {}, korder = [];
    D.drift.forEach(function (d) {
      var k = d.layer < 0 ? d.tap : d.tap.replace(/^model\.layers\.\d+\./, '');
      if (!kinds[k]) { kinds[k] = []; korder.push(k); }
      kinds[k].push(d);
    });
    var dl = document.getElementById('drift');
    var layerSeries = [];
    korder.forEach(function (k) {
      var ds = kinds[k].filter(function (d) { return d.layer >= 0; });
      if (!ds.length) return;
      layerSeries.push({name: k, xs: ds.map(function (d) { return d.layer; }),
                        ys: ds.map(function (d) { return Math.max.apply(null, d.rel); })});
    });
    plot(dl, 'drift (L2 relative error, worst token) against layer, per tap', layerSeries.slice(0, 14), {log: true, xlabel: 'layer', ylabel: 'rel. error'});
    korder.forEach(function (k) {
      var ds = kinds[k];
      var s = ds.map(function (d) { return {name: d.layer < 0 ? k : 'layer ' + d.layer, xs: d.rel.map(function (_, i) { return i; }), ys: d.rel}; });
      plot(dl, 'drift of ' + k + ' against token', s.slice(0, 14), {log: true, xlabel: 'token', ylabel: 'rel. error'});
    });
  }
  // Histograms of budget used per op (log10 bins).
  var hist = document.getElementById('hist');
  ops.forEach(function (op) {
    var a = byOp[op];
    if (a.budgets.length) budget_hist(hist, op + ': error / bound', a.budgets);
  });
  // Failures and uncovered ops.
  var fl = document.getElementById('failures'), nf = 0;
  recs.forEach(function (r, i) {
    if (!r.covered || r.status !== 'FAIL') return;
    if (++nf > 200) return;
    var d = el('div', {'class': 'failure'});
    d.appendChild(el('h3', {}, (i === D.meta.first_failure ? 'FIRST FAILURE: ' : '') + 'token ' + r.token + ', layer ' + r.layer + ', ' + r.op + ' at ' + r.where + ' (' + r.kernel + ')'));
    (r.outputs || []).forEach(function (o) { if (!o.pass) d.appendChild(el('pre', {}, o.name + ': ' + o.reason)); });
    if (r.error) d.appendChild(el('pre', {}, 'error: ' + r.error));
    if (i === D.meta.first_failure && D.meta.case_file)
      d.appendChild(el('pre', {'class': 'cmd'}, 'moeoracle compare --case ' + D.meta.case_file + (D.meta.kernels !== 'bundled' ? ' --kernels ' + D.meta.kernels : '')));
    fl.appendChild(d);
  });
  if (!nf) fl.appendChild(el('p', {}, 'No op failed.'));
  var ul = document.getElementById('uncovered'), seen = {};
  recs.forEach(function (r) {
    if (r.covered) return;
    var k = r.op + ': ' + r.note;
    seen[k] = (seen[k] || 0) + 1;
  });
  var keys = Object.keys(seen);
  if (!keys.length) ul.appendChild(el('li', {}, 'none: every op ran on the kernels'));
  keys.forEach(function (k) { ul.appendChild(el('li', {}, k + ' (' + seen[k] + ' calls)')); });
)JS";




}  // namespace

void write_model_json(std::ostream& os, const ModelCompareResult& r) { os << to_json(r, false).dump(1) << '\n'; }

void write_model_html(std::ostream& os, const ModelCompareResult& r) {
  // The data goes into a <script type="application/json">: "</" must not appear inside it.
  std::string data = to_json(r, true).dump();
  for (size_t p = 0; (p = data.find("</", p)) != std::string::npos; p += 3) data.replace(p, 2, "<\\/");
  const bool ok = r.failed == 0;
  os << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>moeoracle " << html::escape(r.mode)
     << " comparison: " << html::escape(r.model) << "</title><style>" << html::kStyle << "</style></head><body>\n";
  os << "<h1>moeoracle model comparison</h1>\n<p>model <b>" << html::escape(r.model) << "</b>, kernels <b>"
     << html::escape(r.kernels) << "</b>, device <b>" << html::escape(r.device) << "</b>, mode <b>"
     << html::escape(r.mode) << "</b>, " << r.tokens.size() << " tokens.</p>\n";
  os << "<h2 id=\"verdict\" class=\"" << (ok ? "good" : "bad") << "\">" << (ok ? "PASS" : "FAIL") << ": " << r.passed
     << " op calls passed, " << r.failed << " failed, " << r.uncovered << " ran on the CPU (uncovered)</h2>\n";
  os << "<p>script: <span id=\"status\" class=\"unc\">not run (the plots need JavaScript)</span></p>\n";
  os << "<h2>Per op</h2><table id=\"ops\"></table>\n<h2>Per layer</h2><table id=\"layers\"></table>\n";
  os << "<h2>Error against layer and token</h2><p>Error / bound is the worst element's error divided by its "
        "floating-point error bound (1 = at the limit; the dashed line).</p><div id=\"plots\"></div>\n";
  if (!r.drift.empty()) os << "<h2>Drift in free-running mode</h2><div id=\"drift\"></div>\n";
  else os << "<div id=\"drift\"></div>\n";
  os << "<h2>Histograms per op</h2><div id=\"hist\"></div>\n<h2>Failures</h2><div id=\"failures\"></div>\n";
  os << "<h2>Uncovered ops (ran on the CPU)</h2><ul id=\"uncovered\"></ul>\n";
  os << "<script type=\"application/json\" id=\"data\">" << data << "</script>\n<script>" << html::kScriptStart << kScript
     << html::kScriptEnd << "</script>\n</body></html>\n";
}

void save_model_html(const std::string& path, const ModelCompareResult& r) {
  write_stream_atomic(path, "the HTML report (--html)", [&](std::ostream& os) { write_model_html(os, r); });
}

void save_model_json(const std::string& path, const ModelCompareResult& r) {
  write_stream_atomic(path, "the JSON report (--json)", [&](std::ostream& os) { write_model_json(os, r); });
}

}  // namespace moe::compare
