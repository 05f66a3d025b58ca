#include "compare/model/html_report.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/check.h"

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
(function () {
  var status = document.getElementById('status');
  window.onerror = function (m) { status.textContent = 'error: ' + m; status.className = 'bad'; };
  var D = JSON.parse(document.getElementById('data').textContent);
  var plots = 0;
  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  var NS = 'http://www.w3.org/2000/svg';
  function sv(tag, attrs, text) {
    var e = document.createElementNS(NS, tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  var colors = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f',
                '#bcbd22', '#17becf', '#393b79', '#637939', '#8c6d31', '#843c39'];
  // series: [{name, xs, ys}]; y drawn as log10 when opt.log; opt.hline: a reference line.
  function plot(parent, title, series, opt) {
    opt = opt || {};
    var W = 560, H = 300, L = 60, R = 150, T = 28, B = 40;
    var svg = sv('svg', {width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, 'class': 'plot'});
    svg.appendChild(sv('text', {x: L, y: 16, 'class': 'title'}, title));
    var xs = [], ys = [];
    function fy(v) { return opt.log ? Math.log10(Math.max(v, 1e-12)) : v; }
    series.forEach(function (s) { s.xs.forEach(function (x) { xs.push(x); }); s.ys.forEach(function (y) { ys.push(fy(y)); }); });
    if (opt.hline !== undefined) ys.push(fy(opt.hline));
    if (!xs.length) { xs = [0, 1]; ys = [0, 1]; }
    var x0 = Math.min.apply(null, xs), x1 = Math.max.apply(null, xs);
    var y0 = Math.min.apply(null, ys), y1 = Math.max.apply(null, ys);
    if (x1 === x0) { x0 -= 1; x1 += 1; }
    if (y1 === y0) { y0 -= 1; y1 += 1; }
    if (opt.log) { y0 = Math.floor(y0); y1 = Math.ceil(y1); }
    function px(x) { return L + (x - x0) / (x1 - x0) * (W - L - R); }
    function py(y) { return H - B - (y - y0) / (y1 - y0) * (H - T - B); }
    svg.appendChild(sv('line', {x1: L, y1: H - B, x2: W - R, y2: H - B, 'class': 'axis'}));
    svg.appendChild(sv('line', {x1: L, y1: T, x2: L, y2: H - B, 'class': 'axis'}));
    for (var k = 0; k <= 4; ++k) {
      var yv = y0 + (y1 - y0) * k / 4, xv = x0 + (x1 - x0) * k / 4;
      svg.appendChild(sv('text', {x: L - 4, y: py(yv) + 4, 'class': 'tick', 'text-anchor': 'end'},
                         opt.log ? '1e' + yv.toFixed(1).replace('.0', '') : yv.toPrecision(3)));
      svg.appendChild(sv('text', {x: px(xv), y: H - B + 14, 'class': 'tick', 'text-anchor': 'middle'},
                         Math.round(xv * 10) / 10));
    }
    svg.appendChild(sv('text', {x: (L + W - R) / 2, y: H - 6, 'class': 'tick', 'text-anchor': 'middle'}, opt.xlabel || ''));
    svg.appendChild(sv('text', {x: 12, y: T - 8, 'class': 'tick'}, opt.ylabel || ''));
    if (opt.hline !== undefined)
      svg.appendChild(sv('line', {x1: L, x2: W - R, y1: py(fy(opt.hline)), y2: py(fy(opt.hline)), 'class': 'limit'}));
    series.forEach(function (s, i) {
      var c = colors[i % colors.length], pts = [];
      for (var n = 0; n < s.xs.length; ++n) pts.push(px(s.xs[n]) + ',' + py(fy(s.ys[n])));
      svg.appendChild(sv('polyline', {points: pts.join(' '), fill: 'none', stroke: c, 'stroke-width': 1.5}));
      for (var n2 = 0; n2 < s.xs.length; ++n2)
        svg.appendChild(sv('circle', {cx: px(s.xs[n2]), cy: py(fy(s.ys[n2])), r: 2.5, fill: c}));
      svg.appendChild(sv('text', {x: W - R + 8, y: T + 12 + 13 * i, fill: c, 'class': 'tick'}, s.name));
    });
    parent.appendChild(svg);
    ++plots;
  }
  function bars(parent, title, labels, counts, opt) {
    var W = 360, H = 200, L = 40, B = 40, T = 28;
    var svg = sv('svg', {width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, 'class': 'plot'});
    svg.appendChild(sv('text', {x: L, y: 16, 'class': 'title'}, title));
    var m = Math.max.apply(null, counts.concat([1])), bw = (W - L - 10) / counts.length;
    counts.forEach(function (c, i) {
      var h = c / m * (H - T - B);
      svg.appendChild(sv('rect', {x: L + i * bw + 1, y: H - B - h, width: bw - 2, height: h,
                                  fill: opt.bad && opt.bad(i) ? '#d62728' : '#1f77b4'}));
      svg.appendChild(sv('text', {x: L + i * bw + bw / 2, y: H - B + 12, 'class': 'tick', 'text-anchor': 'middle'}, labels[i]));
      if (c) svg.appendChild(sv('text', {x: L + i * bw + bw / 2, y: H - B - h - 2, 'class': 'tick', 'text-anchor': 'middle'}, c));
    });
    svg.appendChild(sv('text', {x: (W + L) / 2, y: H - 8, 'class': 'tick', 'text-anchor': 'middle'}, opt.xlabel || ''));
    parent.appendChild(svg);
    ++plots;
  }
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
  var edges = [-8, -6, -5, -4, -3, -2, -1, 0, 1];
  var labels = ['<1e-6', '1e-6', '1e-5', '1e-4', '1e-3', '1e-2', '0.1', '>=1'];
  ops.forEach(function (op) {
    var a = byOp[op];
    if (!a.budgets.length) return;
    var counts = labels.map(function () { return 0; });
    a.budgets.forEach(function (b) {
      var l = Math.log10(Math.max(b, 1e-12)), i = 0;
      while (i < labels.length - 1 && l >= edges[i + 1]) ++i;
      counts[i]++;
    });
    bars(hist, op + ': error / bound', labels, counts, {xlabel: 'budget used', bad: function (i) { return i === labels.length - 1; }});
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
  status.textContent = 'rendered ' + plots + ' plots';
  status.className = 'good';
  document.body.setAttribute('data-plots', plots);
})();
)JS";

const char* kStyle = R"CSS(
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; }
table { border-collapse: collapse; margin: 8px 0 16px; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
th:first-child, td:first-child { text-align: left; }
.good { background: #e8f5e9; } .bad { background: #ffebee; } .unc { background: #f5f5f5; color: #777; }
#verdict.bad { color: #b71c1c; } #verdict.good { color: #1b5e20; }
.plot { border: 1px solid #eee; margin: 6px; background: #fff; }
.plot .title { font-weight: 600; font-size: 12px; } .plot .tick { font-size: 10px; }
.plot .axis { stroke: #444; } .plot .limit { stroke: #d62728; stroke-dasharray: 4 3; }
pre { background: #f7f7f7; padding: 6px; white-space: pre-wrap; } pre.cmd { background: #eef; }
.failure { border-left: 4px solid #d62728; padding-left: 8px; margin-bottom: 10px; }
)CSS";

std::string html_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '&') o += "&amp;";
    else if (c == '"') o += "&quot;";
    else o += c;
  }
  return o;
}

}  // namespace

void write_model_json(std::ostream& os, const ModelCompareResult& r) { os << to_json(r, false).dump(1) << '\n'; }

void write_model_html(std::ostream& os, const ModelCompareResult& r) {
  // The data goes into a <script type="application/json">: "</" must not appear inside it.
  std::string data = to_json(r, true).dump();
  for (size_t p = 0; (p = data.find("</", p)) != std::string::npos; p += 3) data.replace(p, 2, "<\\/");
  const bool ok = r.failed == 0;
  os << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>moeoracle " << html_escape(r.mode)
     << " comparison: " << html_escape(r.model) << "</title><style>" << kStyle << "</style></head><body>\n";
  os << "<h1>moeoracle model comparison</h1>\n<p>model <b>" << html_escape(r.model) << "</b>, kernels <b>"
     << html_escape(r.kernels) << "</b>, device <b>" << html_escape(r.device) << "</b>, mode <b>"
     << html_escape(r.mode) << "</b>, " << r.tokens.size() << " tokens.</p>\n";
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
  os << "<script type=\"application/json\" id=\"data\">" << data << "</script>\n<script>" << kScript
     << "</script>\n</body></html>\n";
}

void save_model_html(const std::string& path, const ModelCompareResult& r) {
  std::ofstream f(path);
  MOE_CHECK(f, "--html: cannot write " << path);
  write_model_html(f, r);
  MOE_CHECK(f.good(), "--html: writing " << path << " failed");
}

void save_model_json(const std::string& path, const ModelCompareResult& r) {
  std::ofstream f(path);
  MOE_CHECK(f, "--json: cannot write " << path);
  write_model_json(f, r);
  MOE_CHECK(f.good(), "--json: writing " << path << " failed");
}

}  // namespace moe::compare
