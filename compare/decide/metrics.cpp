// Decisions for one output (contract in metrics.h; thresholds explained in
// docs/compare-thresholds.md). Everything is computed in f64 from the f32 found values, which
// f64 holds exactly, so the only rounding in a metric is that of its own f64 arithmetic.
#include "compare/decide/metrics.h"

#include <algorithm>
#include <functional>
#include <bit>
#include <cfloat>
#include <cmath>
#include <iomanip>
#include <limits>
#include <numbers>
#include <sstream>

#include "core/check.h"
#include "core/check_util.h"

namespace moe::compare {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kMinNormal = 0x1.0p-126;  // smallest normal f32
constexpr double kU64 = 0x1.0p-53;         // unit roundoff of f64

// The truth is ref<double>: its transcendentals are within about one f64 ulp of the exact value,
// i.e. 2^-29 f32 ULP. The ULP check therefore allows 2^-20 ULP beyond the budget: 500x the
// truth's own error, and still 2^20 times smaller than the smallest budget (1 ULP), so it can
// never turn a real 1-ULP error into a pass.
constexpr double kTruthUlpSlack = 0x1.0p-20;

std::string num(double v) {
  std::ostringstream os;
  os << std::setprecision(9) << v;  // 9 significant digits round-trip an f32
  return os.str();
}

// "312%", "95%", "0.0119%": whole percents from 10% up (never exponent notation), three
// significant digits below.
std::string pct(double r) {
  if (!std::isfinite(r)) return "inf%";
  std::ostringstream os;
  if (100.0 * r >= 10.0) {
    os << std::fixed << std::setprecision(0) << 100.0 * r << '%';
  } else {
    os << std::setprecision(3) << 100.0 * r << '%';
  }
  return os.str();
}

std::string hex32(uint32_t bits) {
  std::ostringstream os;
  os << "0x" << std::hex << std::setw(8) << std::setfill('0') << bits;
  return os.str();
}

double at(const std::vector<double>& v, size_t i) { return v.size() == 1 ? v[0] : v[i]; }

// A per-element limit vector: one value for all elements or one per element, each finite >= 0.
void check_limits(const OutputSpec& spec, const char* what, const std::vector<double>& v, size_t n) {
  MOE_CHECK(v.size() == 1 || v.size() == n, "compare: output '" << spec.name << "' (" << kind_name(spec.kind)
                                                                << ") has " << v.size() << " " << what
                                                                << " values for " << n << " elements (expected "
                                                                << n << " or 1)");
  for (size_t i = 0; i < v.size(); ++i)
    MOE_CHECK(std::isfinite(v[i]) && v[i] >= 0, "compare: output '" << spec.name << "' " << what << '[' << i
                                                                    << "] = " << v[i]
                                                                    << ": must be finite and >= 0");
}

// First element that failed the unwritten or special rules, for the evidence line.
struct FirstBad {
  int64_t index = -1;
  double expected = 0, found = 0;
  std::string what;
  void set(int64_t i, double e, double f, std::string w) {
    if (index >= 0) return;
    index = i, expected = e, found = f, what = std::move(w);
  }
};

// Running sums of the Reduction aggregates over elements finite on both sides.
struct Sums {
  double tt = 0, ff = 0, tf = 0, bb = 0, max_d = 0, max_t = 0, max_b = 0;
  int64_t n = 0;
  void add(double t, double f, double b) {
    const double d = std::fabs(f - t);
    tt += t * t, ff += f * f, tf += t * f, bb += b * b, ++n;
    max_d = std::max(max_d, d), max_t = std::max(max_t, std::fabs(t)), max_b = std::max(max_b, b);
  }
};

// The aggregate thresholds implied by the per-element bounds (docs/compare-thresholds.md):
// with |d_i| <= b_i for every i, ||d|| <= ||b|| =: B, so for found f = t + d
//   norm ratio:  | ||f|| - ||t|| | <= B                   -> |ratio - 1| <= beta = B / ||t||
//   cosine:      sin(angle(f, t)) <= B / ||t|| if B < ||t|| -> angle <= asin(beta), else any
//   max abs:     max|d| <= max b                          -> max|d| / max|t| <= max b / max|t|
// Slack: the sums are f64 sums of n products, each within gamma_n(2^-53) relative of exact
// (Higham); a derived quantity combines at most four of them, so 4 * gamma_{n+2} covers the
// metric's own rounding. It is ~1e-8 for 2^25 elements: far below any bound we use.
// The cosine is measured through the chord c = ||f/|f| - t/|t||| = 2 sin(angle / 2), not as
// tf / (|t| |f|): the latter rounds to 1 for angles below ~1e-8 rad, which is exactly the size of
// f32 rounding errors, where the chord keeps full relative precision. Each chord term is within
// ~3 u64 of its unit-vector entries, so the chord is within 8 u64 absolute (plus gamma_n).
void aggregates(const Sums& s, std::span<const double> truth, std::span<const float> found, uint32_t poison,
                Verdict& v) {
  const double slack = 4.0 * gamma_n(double(s.n + 2), kU64);
  const double nt = std::sqrt(s.tt), nf = std::sqrt(s.ff), nb = std::sqrt(s.bb);
  const double beta = nt > 0 ? nb / nt * (1 + slack) + slack : kInf;
  bool cos_fail = false, norm_fail = false;
  if (nt > 0) {
    v.norm_ratio = nf / nt;
    v.norm_ratio_tol = beta;
    norm_fail = !(std::fabs(v.norm_ratio - 1) <= beta);
  } else {
    // All-zero truth: the ratio is undefined; the implied check is ||f|| <= ||b||.
    v.norm_ratio = nf == 0 ? 1.0 : kInf;
    v.norm_ratio_tol = kInf;
    norm_fail = !(nf <= nb * (1 + slack));
  }
  v.cosine_min = -1.0;  // beta >= 1: the bounds allow any direction
  if (nt > 0 && nf > 0) {
    double cc = 0;
    for (size_t i = 0; i < truth.size(); ++i) {
      const float f = found[i];
      if (std::bit_cast<uint32_t>(f) == poison || !std::isfinite(f) || !std::isfinite(truth[i])) continue;
      const double e = double(f) / nf - truth[i] / nt;
      cc += e * e;
    }
    v.cosine = 1 - cc / 2;
    if (beta < 1) {
      const double chord_max = 2 * std::sin(std::asin(beta) / 2);
      v.cosine_min = 1 - chord_max * chord_max / 2;
      cos_fail = std::sqrt(cc) > chord_max * (1 + slack) + 8 * kU64;
    }
  } else {
    // A zero vector has no direction: pass only if the bounds allow any direction.
    v.cosine = (nt == 0 && nf == 0) ? 1.0 : 0.0;
    cos_fail = nt > 0 && beta < 1;
  }
  v.max_abs_rel = s.max_t > 0 ? s.max_d / s.max_t : (s.max_d == 0 ? 0.0 : kInf);
  v.max_abs_rel_limit = s.max_t > 0 ? s.max_b / s.max_t * (1 + slack) : kInf;
  const bool max_fail = !(s.max_d <= s.max_b * (1 + slack));
  if (cos_fail) v.failed |= kCosine;
  if (norm_fail) v.failed |= kNormRatio;
  if (max_fail) v.failed |= kMaxAbs;
}

// "norm ratio 1.001 outside 1 +- 0.00024" etc.: short forms used after the first reason.
std::string short_form(uint32_t check, const Verdict& v) {
  std::ostringstream os;
  switch (check) {
    case kUnwritten: os << v.unwritten << " unwritten"; break;
    case kSpecial: os << (v.nan_found + v.nan_missing + v.inf_mismatch) << " NaN/Inf mismatches"; break;
    case kElement: os << v.over_budget << " elements over their bound"; break;
    case kCosine: os << "cosine " << num(v.cosine) << " < " << num(v.cosine_min); break;
    case kNormRatio: os << "norm ratio " << num(v.norm_ratio) << " outside 1 +- " << num(v.norm_ratio_tol); break;
    case kMaxAbs: os << "max|err|/max|truth| " << num(v.max_abs_rel) << " > " << num(v.max_abs_rel_limit); break;
    case kIndexSet: os << v.over_budget << " rows differ"; break;
  }
  return os.str();
}

std::string full_form(uint32_t check, const Verdict& v, const FirstBad& unw, const FirstBad& bad, int64_t n) {
  std::ostringstream os;
  const std::string& y = v.output;
  switch (check) {
    case kUnwritten:
      // A NaN computed from a poisoned value (scratch read before it was written, an unwritten
      // input of a later stage) can keep the poison's payload: say both.
      os << y << '[' << unw.index << "] still holds the poison pattern: never written, or computed from a poisoned "
         << "value (" << v.unwritten << " of " << n << " elements)";
      break;
    case kSpecial:
      os << y << '[' << bad.index << "] expected " << num(bad.expected) << " found " << num(bad.found) << ": "
         << bad.what << " (" << v.nan_found << " NaN found, " << v.nan_missing << " NaN missing, "
         << v.inf_mismatch << " Inf mismatches)";
      break;
    case kElement:
      os << y << '[' << v.worst_index << "] expected " << num(v.expected) << " found " << num(v.found) << ": ";
      if (v.kind == Kind::Reduction) {
        os << pct(v.budget_used) << " of its bound " << num(v.bound);
      } else if (v.kind == Kind::Elementwise) {
        os << num(ulp_error(float(v.found), v.expected)) << " ULP, " << pct(v.budget_used) << " of its "
           << num(v.bound) << " ULP budget";
      } else {
        os << "not bit-equal (" << hex32(std::bit_cast<uint32_t>(float(v.expected))) << " vs "
           << hex32(std::bit_cast<uint32_t>(float(v.found))) << ")";
      }
      os << " (" << v.over_budget << " of " << n << " elements over)";
      break;
    case kCosine:
      os << y << ": cosine " << num(v.cosine) << " below " << num(v.cosine_min)
         << ", the worst the bounds allow (a direction error)";
      break;
    case kNormRatio:
      os << y << ": norm ratio |found|/|truth| = " << num(v.norm_ratio) << " outside 1 +- " << num(v.norm_ratio_tol)
         << ", the most the bounds allow (a scale error; cosine " << num(v.cosine) << ")";
      break;
    case kMaxAbs:
      os << y << ": max|found - truth| / max|truth| = " << num(v.max_abs_rel) << " above "
         << num(v.max_abs_rel_limit) << ", the most the bounds allow";
      break;
  }
  return os.str();
}

// The reason: the first failing criterion in full, then the others in short.
std::string fail_reason(const Verdict& v, const FirstBad& unw, const FirstBad& bad, int64_t n,
                        const std::string& first_full) {
  std::string r = first_full;
  bool first = true, more = false;
  for (uint32_t c = 1; c <= kIndexSet; c <<= 1) {
    if (!(v.failed & c)) continue;
    if (first) {
      first = false;
      if (r.empty()) r = full_form(c, v, unw, bad, n);
      continue;
    }
    r += more ? ", " : "; also ";
    r += short_form(c, v);
    more = true;
  }
  return r;
}

std::string pass_reason(const Verdict& v) {
  std::ostringstream os;
  os << v.output << ": ";
  switch (v.kind) {
    case Kind::Reduction:
      os << "worst " << v.output << '[' << v.worst_index << "] at " << pct(v.budget_used) << " of its bound; cosine "
         << num(v.cosine) << ", norm ratio " << num(v.norm_ratio);
      break;
    case Kind::Elementwise:
      os << "max " << num(v.max_ulp) << " ULP; worst " << v.output << '[' << v.worst_index << "] at "
         << pct(v.budget_used) << " of its budget";
      break;
    case Kind::Exact: os << v.compared << " elements bit-equal"; break;
    case Kind::Indices: os << v.compared << " rows match, " << v.near_ties << " of them as near-ties"; break;
  }
  if (v.warn) os << " (WARNING: >= " << pct(kWarnBudget) << " of the budget)";
  return os.str();
}

void finish(Verdict& v, const FirstBad& unw, const FirstBad& bad, int64_t n, const std::string& first_full = "") {
  v.pass = v.failed == 0;
  v.warn = v.pass && v.budget_used >= kWarnBudget;
  v.reason = v.pass ? pass_reason(v) : fail_reason(v, unw, bad, n, first_full);
}

int sign_of(double x) { return std::signbit(x) ? -1 : 1; }

}  // namespace

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::Reduction: return "reduction";
    case Kind::Elementwise: return "elementwise";
    case Kind::Exact: return "exact";
    case Kind::Indices: return "indices";
  }
  return "?";
}

double ulp_f32(double x) {
  if (!std::isfinite(x)) return kNaN;
  const double a = std::fabs(x);
  if (a < kMinNormal) return 0x1.0p-149;  // subnormal spacing
  if (a >= FLT_MAX) return 0x1.0p104;     // FLT_MAX minus the float below it
  int e = 0;
  const double m = std::frexp(a, &e);  // a = m 2^e, m in [0.5, 1): a in [2^(e-1), 2^e)
  const double up = std::ldexp(1.0, e - 24);
  // At a power of two the gap below is half the gap above, and Vulkan takes the smaller one.
  return (m == 0.5 && a > kMinNormal) ? up / 2 : up;
}

double ulp_error(float found, double truth) {
  if (!std::isfinite(double(found)) || !std::isfinite(truth))
    return (double(found) == truth) ? 0.0 : kInf;  // equal infinities: no error
  return std::fabs(double(found) - truth) / ulp_f32(truth);
}

double ulp_distance(float a, double truth) {
  if (std::isnan(a) || std::isnan(truth)) return kInf;
  // Map sign-magnitude bits onto a line where neighbouring floats differ by 1 (+-0 both at 0).
  auto key = [](float x) {
    const uint32_t b = std::bit_cast<uint32_t>(x);
    return (b & 0x80000000u) ? -int64_t(b & 0x7FFFFFFFu) : int64_t(b);
  };
  return double(std::llabs(key(a) - key(float(truth))));
}

double vk_ulp::log(double x, double result) {
  // Inside [0.5, 2] log is near 0, where a ULP bound would be meaningless, hence the absolute one.
  if (x >= 0.5 && x <= 2.0) return from_abs(0x1.0p-21, result);
  return 3.0;
}

double vk_ulp::sincos(double x, double result) {
  MOE_CHECK(std::fabs(x) <= std::numbers::pi,
            "compare: sin/cos of " << x << " is outside [-pi, pi], where the Vulkan precision rules give no bound;"
                                   << " reduce the range in the kernel and bound it in the case");
  return from_abs(0x1.0p-11, result);
}

Verdict decide(const OutputSpec& spec, std::span<const double> truth, std::span<const float> found,
               uint32_t poison_bits) {
  MOE_CHECK(spec.kind != Kind::Indices,
            "compare: output '" << spec.name << "' is of kind indices: use decide_indices, not decide");
  MOE_CHECK(truth.size() == found.size(), "compare: output '" << spec.name << "': truth has " << truth.size()
                                                              << " elements, found " << found.size());
  MOE_CHECK(!truth.empty(), "compare: output '" << spec.name << "' is empty: nothing to compare");
  const size_t n = truth.size();
  if (spec.kind == Kind::Reduction) check_limits(spec, "bound", spec.bound, n);
  if (spec.kind == Kind::Elementwise) check_limits(spec, "ulp_budget", spec.ulp_budget, n);

  Verdict v;
  v.output = spec.name;
  v.kind = spec.kind;
  FirstBad unw, bad;  // first unwritten element, first NaN/Inf mismatch
  Sums sums;
  double worst = -1;  // worst ratio so far; the first element attaining it is the evidence
  for (size_t i = 0; i < n; ++i) {
    const double t = truth[i];
    const float f = found[i];
    const uint32_t bits = std::bit_cast<uint32_t>(f);
    if (bits == poison_bits) {
      ++v.unwritten;
      unw.set(int64_t(i), t, f, "never written");
      continue;
    }
    if (std::isnan(t) || std::isnan(f)) {
      if (std::isnan(t) && std::isnan(f)) continue;  // a double truth cannot carry an f32 payload
      ++(std::isnan(f) ? v.nan_found : v.nan_missing);
      bad.set(int64_t(i), t, f, std::isnan(f) ? "NaN where the truth is finite" : "the truth is NaN");
      continue;
    }
    // The error this element may have, used where an infinity could be within it.
    const double allowed = spec.kind == Kind::Reduction     ? at(spec.bound, i)
                           : spec.kind == Kind::Elementwise ? at(spec.ulp_budget, i) * ulp_f32(t)
                                                            : 0.0;
    // Vulkan (spirvenv, ULP): "where the range of allowed return values includes any value of
    // magnitude larger than that of the largest representable finite floating-point number",
    // an infinity of the right sign or the largest finite value of that sign may be returned.
    // Exact (data movement) demands the very same value.
    const bool may_overflow = spec.kind != Kind::Exact && (std::isinf(t) || std::fabs(t) + allowed > FLT_MAX);
    if (std::isinf(f) || std::isinf(t) || (may_overflow && std::fabs(f) == FLT_MAX)) {
      const bool ok = double(f) == t || (may_overflow && sign_of(f) == sign_of(t) &&
                                         (std::isinf(f) || std::fabs(f) == FLT_MAX));
      if (!ok) {
        ++v.inf_mismatch;
        bad.set(int64_t(i), t, f, "infinity not matched in sign or not allowed");
      }
      continue;
    }
    ++v.compared;
    double ratio = 0;
    double err = std::fabs(double(f) - t);
    switch (spec.kind) {
      case Kind::Reduction: {
        const double b = at(spec.bound, i);
        sums.add(t, f, b);
        ratio = err == 0 ? 0.0 : (b > 0 ? err / b : kInf);
        if (ratio > 1) ++v.over_budget;
        if (ratio > worst) worst = ratio, v.worst_index = int64_t(i), v.bound = b;
        break;
      }
      case Kind::Elementwise: {
        const double budget = at(spec.ulp_budget, i);
        // Vulkan may flush denormal results to zero by default (spirvenv, float controls):
        // a zero where the exact result is below the smallest normal is not an error.
        const double ulps = (f == 0.0f && std::fabs(t) < kMinNormal) ? 0.0 : ulp_error(f, t);
        const bool over = ulps > budget + kTruthUlpSlack;
        ratio = ulps <= kTruthUlpSlack ? 0.0 : (budget > 0 ? ulps / budget : kInf);
        if (!over) ratio = std::min(ratio, 1.0);
        if (over) ++v.over_budget;
        v.max_ulp = std::max(v.max_ulp, ulps);
        if (ratio > worst) worst = ratio, v.worst_index = int64_t(i), v.bound = budget;
        break;
      }
      case Kind::Exact: {
        const float tf = float(t);
        MOE_CHECK(double(tf) == t, "compare: output '" << spec.name << "' (exact): truth[" << i << "] = "
                                                       << num(t) << " is not an f32 value; data movement truth"
                                                       << " must be exactly representable");
        // Bit equality: -0 and +0 differ (a sign-of-zero bug is a data-movement bug; Vulkan's
        // OpLoad/OpStore/OpCopy* may not alter bits, not even flush denormals).
        const bool differ = std::bit_cast<uint32_t>(tf) != bits;
        ratio = differ ? kInf : 0.0;
        if (differ && v.over_budget++ == 0) worst = ratio, v.worst_index = int64_t(i);
        if (!differ && worst < 0) worst = 0, v.worst_index = int64_t(i);
        break;
      }
      case Kind::Indices: break;
    }
    if (v.worst_index == int64_t(i)) v.expected = t, v.found = f;
  }
  v.budget_used = std::max(worst, 0.0);
  if (v.compared == 0) v.budget_used = 0;
  if (v.unwritten) v.failed |= kUnwritten;
  if (v.nan_found || v.nan_missing || v.inf_mismatch) v.failed |= kSpecial;
  if (v.over_budget) v.failed |= kElement;
  if (spec.kind == Kind::Reduction && sums.n > 0) aggregates(sums, truth, found, poison_bits, v);
  finish(v, unw, bad, int64_t(n));
  return v;
}

Verdict decide_bits(const OutputSpec& spec, std::span<const uint32_t> truth, std::span<const uint32_t> found,
                    uint32_t poison_bits) {
  MOE_CHECK(truth.size() == found.size(), "compare: output '" << spec.name << "': truth has " << truth.size()
                                                              << " words, found " << found.size());
  MOE_CHECK(!truth.empty(), "compare: output '" << spec.name << "' is empty: nothing to compare");
  Verdict v;
  v.output = spec.name;
  v.kind = Kind::Exact;
  FirstBad unw, none;
  for (size_t i = 0; i < truth.size(); ++i) {
    MOE_CHECK(truth[i] != poison_bits, "compare: output '" << spec.name << "': truth[" << i << "] equals the poison "
                                                           << hex32(poison_bits)
                                                           << "; poison with another pattern");
    if (found[i] == poison_bits) {
      ++v.unwritten;
      unw.set(int64_t(i), truth[i], found[i], "never written");
      continue;
    }
    ++v.compared;
    if (truth[i] != found[i] && v.over_budget++ == 0) {
      v.worst_index = int64_t(i), v.expected = truth[i], v.found = found[i];
    }
  }
  if (v.unwritten) v.failed |= kUnwritten;
  if (v.over_budget) v.failed |= kElement;
  v.budget_used = v.over_budget ? kInf : 0.0;
  std::string first;
  if (!(v.failed & kUnwritten) && v.over_budget) {
    std::ostringstream os;
    os << v.output << '[' << v.worst_index << "] expected " << hex32(uint32_t(v.expected)) << " found "
       << hex32(uint32_t(v.found)) << ": not bit-equal (" << v.over_budget << " of " << truth.size()
       << " words differ)";
    first = os.str();
  }
  finish(v, unw, none, int64_t(truth.size()), first);
  return v;
}

namespace {

std::string set_str(std::vector<int32_t> v) {
  std::sort(v.begin(), v.end());
  std::ostringstream os;
  os << '{';
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << '}';
  return os.str();
}

// Why `fs`, a set of K distinct valid experts that differs from the truth's, is not an acceptable
// near-tie of one row's scores (`row`, its bounds from `bound_at(base + e)`); "" when it is. It
// is one when some scores within the bounds rank it top-K: min over the set of s + b >= max over
// the rest of s - b. Exact ties (equal f64 scores: bit-identical inputs, or values every f32
// formula also rounds alike) go to the lowest index in every engine (docs/ops/moe.md "Softmax router"), and a
// kernel computes equal scores for them, so no rounding can excuse the other choice. `expected`
// and `found` receive the two experts the reason names.
std::string not_a_near_tie(std::span<const double> row, const std::function<double(size_t)>& bound_at, size_t base,
                           const std::vector<int32_t>& fs, size_t* expected, size_t* found) {
  const size_t experts = row.size();
  std::vector<uint8_t> in(experts, 0);
  for (int32_t e : fs) in[size_t(e)] = 1;
  double lo = kInf, hi = -kInf;  // min over F of s + b, max over the rest of s - b
  size_t lo_e = 0, hi_e = 0;
  for (size_t e = 0; e < experts; ++e) {
    const double s = row[e], b = bound_at(base + e);
    if (in[e] && !(s + b >= lo)) lo = s + b, lo_e = e;
    if (!in[e] && !(s - b <= hi)) hi = s - b, hi_e = e;
  }
  size_t tie_in = experts, tie_out = experts;
  for (size_t e = 0; e < experts && tie_in == experts; ++e)
    if (in[e] && std::isfinite(row[e]))
      for (size_t j = 0; j < e; ++j)
        if (!in[j] && row[j] == row[e]) {
          tie_in = e, tie_out = j;
          break;
        }
  if (lo >= hi && tie_in == experts) return "";
  std::ostringstream os;
  if (lo < hi) {
    os << "expert " << lo_e << " (score " << num(row[lo_e]) << " +- " << num(bound_at(base + lo_e))
       << ") cannot rank above expert " << hi_e << " (score " << num(row[hi_e]) << " +- "
       << num(bound_at(base + hi_e)) << ")";
  } else {
    lo_e = tie_in, hi_e = tie_out;
    os << "experts " << tie_out << " and " << tie_in << " tie exactly (score " << num(row[tie_in])
       << "): the lower index must win";
  }
  *expected = hi_e, *found = lo_e;
  return os.str();
}

}  // namespace

Verdict decide_indices(const OutputSpec& spec, std::span<const int32_t> truth, std::span<const int32_t> found,
                       std::span<const double> scores, std::span<const double> score_bound, uint32_t poison_bits) {
  const int64_t k = spec.row;
  MOE_CHECK(k > 0, "compare: output '" << spec.name << "' (indices): row length K = " << k << ", must be > 0");
  MOE_CHECK(truth.size() == found.size(), "compare: output '" << spec.name << "': truth has " << truth.size()
                                                              << " indices, found " << found.size());
  MOE_CHECK(!truth.empty() && truth.size() % size_t(k) == 0,
            "compare: output '" << spec.name << "': " << truth.size() << " indices is not a positive multiple of K = "
                                << k);
  const size_t rows = truth.size() / size_t(k);
  size_t experts = 0;
  if (!scores.empty()) {
    MOE_CHECK(scores.size() % rows == 0 && scores.size() / rows >= size_t(k),
              "compare: output '" << spec.name << "': " << scores.size() << " scores for " << rows
                                  << " rows (expected rows x E with E >= K = " << k << ")");
    experts = scores.size() / rows;
  }
  MOE_CHECK(score_bound.empty() || (!scores.empty() && (score_bound.size() == 1 || score_bound.size() == scores.size())),
            "compare: output '" << spec.name << "': " << score_bound.size() << " score bounds for " << scores.size()
                                << " scores (expected 0, 1 or one per score, and scores with them)");
  for (size_t i = 0; i < score_bound.size(); ++i)
    MOE_CHECK(std::isfinite(score_bound[i]) && score_bound[i] >= 0,
              "compare: output '" << spec.name << "' score_bound[" << i << "] = " << score_bound[i]
                                  << ": must be finite and >= 0");
  const int32_t poison = std::bit_cast<int32_t>(poison_bits);
  const std::function<double(size_t)> bound_at = [&](size_t i) {
    return score_bound.empty() ? 0.0 : score_bound[score_bound.size() == 1 ? 0 : i];
  };

  Verdict v;
  v.output = spec.name;
  v.kind = Kind::Indices;
  FirstBad unw, none;
  std::string first;  // evidence of the first differing row
  for (size_t r = 0; r < rows; ++r) {
    const auto t = truth.subspan(r * size_t(k), size_t(k));
    const auto f = found.subspan(r * size_t(k), size_t(k));
    ++v.compared;
    const auto unwritten = std::count(f.begin(), f.end(), poison);
    if (unwritten) {
      v.unwritten += unwritten;
      unw.set(int64_t(r * size_t(k) + size_t(std::find(f.begin(), f.end(), poison) - f.begin())), 0, poison,
              "never written");
      continue;
    }
    std::vector<int32_t> ts(t.begin(), t.end()), fs(f.begin(), f.end());
    std::sort(ts.begin(), ts.end());
    std::sort(fs.begin(), fs.end());
    if (ts == fs) continue;
    // Differing sets: a near-tie alternative only if the found set is K distinct valid experts
    // and is the top-K of some scores within the bounds (metrics.h, docs/compare-thresholds.md).
    std::string why;
    const bool valid = std::adjacent_find(fs.begin(), fs.end()) == fs.end() && fs.front() >= 0 &&
                       size_t(fs.back()) < experts;
    const bool truth_valid = ts.front() >= 0;  // -1: a NaN token, which must be matched exactly
    if (experts == 0) {
      why = "sets differ (no scores given, so no near-tie can be accepted)";
    } else if (!truth_valid) {
      why = "the truth has -1 (no expert: a NaN token) and must be matched exactly";
    } else if (!valid) {
      why = "found is not " + std::to_string(k) + " distinct experts in [0, " + std::to_string(experts) + ")";
    } else {
      size_t hi_e = 0, lo_e = 0;
      why = not_a_near_tie(scores.subspan(r * experts, experts), bound_at, r * experts, fs, &hi_e, &lo_e);
      if (why.empty()) {
        ++v.near_ties;
        continue;
      }
      if (v.over_budget == 0) v.expected = double(hi_e), v.found = double(lo_e);
    }
    if (v.over_budget++ == 0) {
      v.worst_index = int64_t(r);
      std::ostringstream os;
      os << v.output << " row " << r << ": expected " << set_str(ts) << " found " << set_str(fs) << ": " << why
         << " (" << "ROWS rows differ)";
      first = os.str();
    }
  }
  if (v.unwritten) v.failed |= kUnwritten;
  if (v.over_budget) v.failed |= kIndexSet;
  v.budget_used = v.over_budget ? kInf : 0.0;
  if (!first.empty()) first.replace(first.find("ROWS"), 4, std::to_string(v.over_budget) + " of " + std::to_string(rows));
  finish(v, unw, none, int64_t(truth.size()), (v.failed & kUnwritten) ? std::string() : first);
  return v;
}

}  // namespace moe::compare
