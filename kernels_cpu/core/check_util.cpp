#include "core/check_util.h"

#include <cmath>
#include <sstream>

#include "core/check.h"

namespace moe {
namespace {

// One element: returns the ratio |found - expected| / bound, or a negative value for a NaN/Inf
// mismatch. NaN must be matched by NaN; an infinity by the same infinity.
double element_ratio(float e, float f, double bound) {
  if (std::isnan(e) || std::isnan(f)) return (std::isnan(e) && std::isnan(f)) ? 0.0 : -1.0;
  if (std::isinf(e) || std::isinf(f)) return (e == f) ? 0.0 : -1.0;
  const double diff = std::fabs(double(f) - double(e));
  if (diff == 0.0) return 0.0;
  if (bound <= 0.0) return INFINITY;  // exactness demanded
  return diff / bound;
}

}  // namespace

void TierReport::add(const char* output, std::span<const float> e, std::span<const float> f,
                     std::span<const double> bounds) {
  MOE_CHECK(e.size() == f.size() && e.size() == bounds.size(),
            "agreement: output '" << output << "' sizes differ: truth " << e.size() << ", " << tier << ' '
                                  << f.size() << ", bound " << bounds.size());
  for (size_t i = 0; i < e.size(); ++i) {
    const double r = element_ratio(e[i], f[i], bounds[i]);
    ++compared;
    if (r < 0) {
      if (special_mismatch++ == 0) {
        worst_output = output, worst_index = int64_t(i), expected = e[i], found = f[i], bound = bounds[i];
        worst_ratio = INFINITY;
      }
      continue;
    }
    if (special_mismatch == 0 && (r > worst_ratio || worst_index < 0)) {
      worst_ratio = r, worst_output = output, worst_index = int64_t(i);
      expected = e[i], found = f[i], bound = bounds[i];
    }
  }
}

void TierReport::add(const char* output, std::span<const float> e, std::span<const float> f, double b) {
  std::vector<double> bound(e.size(), b);
  add(output, e, f, bound);
}

void TierReport::add_exact(const char* output, std::span<const int32_t> e, std::span<const int32_t> f) {
  MOE_CHECK(e.size() == f.size(), "agreement: output '" << output << "' sizes differ: truth " << e.size() << ", "
                                                        << tier << ' ' << f.size());
  for (size_t i = 0; i < e.size(); ++i) {
    ++compared;
    if (e[i] != f[i] && special_mismatch++ == 0) {
      worst_ratio = INFINITY, worst_output = output, worst_index = int64_t(i);
      expected = e[i], found = f[i], bound = 0;
    }
  }
}

std::string describe(const CheckResult& r, const TierReport& t) {
  std::ostringstream os;
  os << r.op << " [" << r.shape << "] " << t.tier << ": ";
  if (t.compared == 0) {
    os << "nothing compared";
  } else {
    os << t.worst_output << '[' << t.worst_index << "] expected " << t.expected << " found " << t.found
       << " bound " << t.bound << " (" << 100.0 * t.worst_ratio << "% of budget";
    if (t.special_mismatch) os << ", " << t.special_mismatch << " NaN/Inf mismatches";
    os << ")";
  }
  os << "  seed=" << r.seed << " " << r.params;
  return os.str();
}

}  // namespace moe
