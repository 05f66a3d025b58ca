#include "oracle/drift.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/check.h"

namespace moe {
namespace {

// ln softmax of one row in f64 (the max subtracted first); false when a logit is NaN or +inf
// (-inf is a legitimate zero probability).
bool log_softmax(std::span<const float> row, std::vector<double>& out) {
  double mx = -INFINITY;
  for (float v : row) {
    if (std::isnan(v) || v == INFINITY) return false;
    mx = std::max(mx, double(v));
  }
  if (mx == -INFINITY) return false;  // no token possible
  double sum = 0;
  for (float v : row) sum += std::exp(double(v) - mx);
  const double lse = mx + std::log(sum);
  out.resize(row.size());
  for (size_t i = 0; i < row.size(); ++i) out[i] = double(row[i]) - lse;
  return true;
}

size_t argmax(std::span<const float> row) {
  return size_t(std::max_element(row.begin(), row.end()) - row.begin());  // the first of equal maxima
}

Estimate estimate(const std::vector<double>& xs) {
  Estimate e;
  if (xs.empty()) return e;
  double sum = 0;
  for (double x : xs) sum += x;
  e.mean = sum / double(xs.size());
  if (xs.size() < 2) return e;
  double sq = 0;
  for (double x : xs) sq += (x - e.mean) * (x - e.mean);
  e.std_error = std::sqrt(sq / double(xs.size() - 1) / double(xs.size()));
  return e;
}

// The nearest-rank q-quantile of sorted values.
double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const size_t rank = size_t(std::ceil(q * double(sorted.size())));
  return sorted[std::min(sorted.size() - 1, rank == 0 ? 0 : rank - 1)];
}

}  // namespace

DriftStats drift_stats(std::span<const float> base, std::span<const float> test, int64_t rows, int64_t vocab,
                       std::span<const int32_t> tokens) {
  MOE_CHECK(rows >= 0 && vocab > 0 && base.size() == size_t(rows * vocab) && test.size() == base.size(),
            "drift: base has " << base.size() << " logits, test " << test.size() << ", expected " << rows << " x "
                               << vocab);
  MOE_CHECK(tokens.empty() || tokens.size() >= size_t(rows),
            "drift: " << tokens.size() << " tokens for " << rows << " rows of logits");
  DriftStats s;
  s.rows = rows, s.vocab = vocab;
  std::vector<double> lb, lt, finite_kld, same, dps, ratios;
  for (int64_t t = 0; t < rows; ++t) {
    const auto rb = base.subspan(size_t(t * vocab), size_t(vocab)), rt = test.subspan(size_t(t * vocab), size_t(vocab));
    MOE_CHECK(log_softmax(rb, lb), "drift: base row " << t << " has a NaN or +inf logit, or every logit -inf");
    double kld = INFINITY;
    if (log_softmax(rt, lt)) {
      kld = 0;
      for (int64_t v = 0; v < vocab; ++v)
        if (lb[size_t(v)] > -INFINITY) kld += std::exp(lb[size_t(v)]) * (lb[size_t(v)] - lt[size_t(v)]);
      kld = std::max(kld, 0.0);  // rounding can leave a tiny negative sum for equal rows
    }
    s.kld_per_row.push_back(kld);
    if (std::isfinite(kld)) finite_kld.push_back(kld);
    else ++s.nonfinite;
    const bool top = argmax(rb) == argmax(rt);
    same.push_back(top ? 1.0 : 0.0);
    if (!top && s.first_top_change < 0) s.first_top_change = t;
    if (!tokens.empty() && t + 1 < int64_t(tokens.size())) {
      const int32_t next = tokens[size_t(t + 1)];
      MOE_CHECK(next >= 0 && next < vocab, "drift: token " << next << " at position " << t + 1 << " is outside the vocabulary of " << vocab);
      const double pb = std::exp(lb[size_t(next)]);
      const double pt = std::isfinite(kld) ? std::exp(lt[size_t(next)]) : 0.0;
      dps.push_back(pt - pb);
      if (std::isfinite(kld)) ratios.push_back(lb[size_t(next)] - lt[size_t(next)]);
    }
  }
  s.kld = estimate(finite_kld);
  std::vector<double> sorted = finite_kld;
  std::sort(sorted.begin(), sorted.end());
  if (!sorted.empty()) {
    s.kld_max = sorted.back(), s.kld_min = sorted.front();
    s.kld_p999 = quantile(sorted, 0.999), s.kld_p99 = quantile(sorted, 0.99);
    s.kld_p90 = quantile(sorted, 0.90), s.kld_median = quantile(sorted, 0.5);
  }
  s.same_top.mean = rows ? estimate(same).mean : 0;
  s.same_top.std_error = rows > 1 ? std::sqrt(s.same_top.mean * (1 - s.same_top.mean) / double(rows - 1)) : 0;
  s.scored = int64_t(dps.size());
  s.dp = estimate(dps);
  double sq = 0;
  for (double d : dps) sq += d * d, s.dp_max = std::max(s.dp_max, d), s.dp_min = std::min(s.dp_min, d);
  s.dp_rms = dps.empty() ? 0 : std::sqrt(sq / double(dps.size()));
  s.ln_ppl_ratio = estimate(ratios);
  return s;
}

PositionDrift position_drift(std::span<const float> base, std::span<const float> test, int64_t rows, int64_t cols,
                             int64_t windows) {
  MOE_CHECK(
      rows > 0 && cols > 0 && base.size() == size_t(rows * cols) && test.size() == base.size(),
      "drift: base has " << base.size() << " values, test " << test.size() << ", expected " << rows << " x " << cols);
  MOE_CHECK(windows >= 1, "drift: " << windows << " windows, expected >= 1");
  PositionDrift d;
  for (int64_t r = 0; r < rows; ++r) {
    double e2 = 0, b2 = 0;
    bool finite = true;
    for (int64_t c = 0; c < cols; ++c) {
      const double b = base[size_t(r * cols + c)], t = test[size_t(r * cols + c)];
      finite = finite && std::isfinite(t);
      e2 += (t - b) * (t - b), b2 += b * b;
    }
    d.rel.push_back(!finite ? INFINITY : b2 > 0 ? std::sqrt(e2 / b2) : std::sqrt(e2));
  }
  const int64_t w = std::min(windows, rows), span = rows / w;
  for (int64_t i = 0; i < w; ++i) {
    const int64_t a = i * span, b = i + 1 == w ? rows : a + span;
    double sum = 0, mx = 0;
    for (int64_t r = a; r < b; ++r) sum += d.rel[size_t(r)], mx = std::max(mx, d.rel[size_t(r)]);
    d.window_start.push_back(a), d.window_mean.push_back(sum / double(b - a)), d.window_max.push_back(mx);
  }
  return d;
}

}  // namespace moe
