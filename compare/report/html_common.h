// Pieces shared by the HTML reports (model-level: compare/model/html_report.cpp; op-level:
// compare/report_html.cpp): the style sheet, the opening of the page script (status handling,
// DOM and SVG helpers, plot() for log/linear line plots and bars() for histograms), escaping.
// Every report page is self-contained: no network needed to view it.
#pragma once
#include <string>

#include "oracle/html_escape.h"

namespace moe::compare::html {

// Opens "(function () {" and defines status, D (the JSON in #data), plots, el, sv, plot, bars;
// the page's own script continues it and must end with kScriptEnd.
inline constexpr const char* kScriptStart = R"JS(
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
  // Histogram of error / bound over log10 bins; the last bin (>= 1: over the bound) in red.
  function budget_hist(parent, title, budgets) {
    var edges = [-8, -6, -5, -4, -3, -2, -1, 0, 1];
    var labels = ['<1e-6', '1e-6', '1e-5', '1e-4', '1e-3', '1e-2', '0.1', '>=1'];
    var counts = labels.map(function () { return 0; });
    budgets.forEach(function (b) {
      var l = Math.log10(Math.max(b, 1e-12)), i = 0;
      while (i < labels.length - 1 && l >= edges[i + 1]) ++i;
      counts[i]++;
    });
    bars(parent, title, labels, counts, {xlabel: 'budget used', bad: function (i) { return i === labels.length - 1; }});
  }
)JS";

// Sets #status to "rendered N plots" (a headless browser checks it) and closes the function.
inline constexpr const char* kScriptEnd = R"JS(
  status.textContent = 'rendered ' + plots + ' plots';
  status.className = 'good';
  document.body.setAttribute('data-plots', plots);
})();
)JS";

inline constexpr const char* kStyle = R"CSS(
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

inline std::string escape(const std::string& s) { return html_escape(s); }

}  // namespace moe::compare::html
