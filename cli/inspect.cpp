// `inspect` and `diff` over safetensors dumps.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <span>

#include "core/bf16.h"
#include "core/check.h"
#include "oracle/safetensors.h"
#include "oracle/tap_map.h"
#include "run.h"

namespace moe {
namespace {

// IEEE half (engines often dump f16): sign, 5-bit exponent, 10-bit fraction.
double half_to_double(uint16_t h) {
  const int sign = h >> 15, e = (h >> 10) & 31, f = h & 1023;
  double v;
  if (e == 0) v = std::ldexp(double(f), -24);
  else if (e == 31) v = f ? NAN : INFINITY;
  else v = std::ldexp(double(f | 1024), e - 25);
  return sign ? -v : v;
}

// Values of a tensor as doubles (numeric dtypes only).
std::vector<double> values(const TensorInfo& t) {
  const int64_t n = t.numel();
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* p = t.data + size_t(i) * dtype_size(t.dtype);
    switch (t.dtype) {
      case DType::F32: { float x; std::memcpy(&x, p, 4); v[size_t(i)] = x; break; }
      case DType::F64: { double x; std::memcpy(&x, p, 8); v[size_t(i)] = x; break; }
      case DType::BF16: { bf16 x; std::memcpy(&x, p, 2); v[size_t(i)] = bf16_to_f32(x); break; }
      case DType::F16: { uint16_t x; std::memcpy(&x, p, 2); v[size_t(i)] = half_to_double(x); break; }
      case DType::I32: { int32_t x; std::memcpy(&x, p, 4); v[size_t(i)] = x; break; }
      case DType::U32: { uint32_t x; std::memcpy(&x, p, 4); v[size_t(i)] = x; break; }
      case DType::I64: { int64_t x; std::memcpy(&x, p, 8); v[size_t(i)] = double(x); break; }
      case DType::U8: v[size_t(i)] = *p; break;
      default: MOE_FAIL(t.file << ": tensor '" << t.name << "' has dtype " << dtype_name(t.dtype) << ", not supported here");
    }
  }
  return v;
}

}  // namespace

int inspect_dump(const InspectOptions& opt) {
  SafetensorsFile f(opt.file);
  for (const auto& [k, v] : f.metadata()) std::printf("# %s: %s\n", k.c_str(), v.c_str());
  std::printf("%-56s %-5s %-14s %12s %12s %12s %12s %6s %6s\n", "tensor", "dtype", "shape", "min", "max", "mean",
              "std", "NaN", "Inf");
  for (const std::string& name : f.names_in_file_order()) {
    const TensorInfo& t = *f.find(name);
    const std::vector<double> v = values(t);
    double lo = INFINITY, hi = -INFINITY, sum = 0, sq = 0;
    int64_t nan = 0, inf = 0, finite = 0;
    for (double x : v) {
      if (std::isnan(x)) { ++nan; continue; }
      if (std::isinf(x)) { ++inf; continue; }
      lo = std::min(lo, x), hi = std::max(hi, x), sum += x, sq += x * x, ++finite;
    }
    const double mean = finite ? sum / double(finite) : NAN;
    const double sd = finite ? std::sqrt(std::max(0.0, sq / double(finite) - mean * mean)) : NAN;
    std::printf("%-56s %-5s %-14s %12.5g %12.5g %12.5g %12.5g %6lld %6lld\n", name.c_str(), dtype_name(t.dtype),
                t.shape_string().c_str(), lo, hi, mean, sd, (long long)nan, (long long)inf);
  }
  return 0;
}

namespace {

struct DiffStats {
  double maxd = 0, maxa = 0, rel = 0, cosine = 1;
  int64_t special = 0;
};

DiffStats diff_stats(std::span<const double> va, std::span<const double> vb) {
  DiffStats d;
  double dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < va.size(); ++i) {
    const bool sa = !std::isfinite(va[i]), sb = !std::isfinite(vb[i]);
    if (sa || sb) {
      if (!(sa && sb && (va[i] == vb[i] || (std::isnan(va[i]) && std::isnan(vb[i]))))) ++d.special;
      continue;
    }
    d.maxd = std::max(d.maxd, std::fabs(va[i] - vb[i]));
    d.maxa = std::max(d.maxa, std::fabs(va[i]));
    dot += va[i] * vb[i], na += va[i] * va[i], nb += vb[i] * vb[i];
  }
  d.rel = d.maxa > 0 ? d.maxd / d.maxa : (d.maxd > 0 ? INFINITY : 0.0);
  d.cosine = na > 0 && nb > 0 ? dot / std::sqrt(na * nb) : (na == nb ? 1.0 : 0.0);
  return d;
}

// One B tensor lined up with a tap of A (all of it, or one token's row).
struct Pairing {
  std::string b_name;
  int64_t token = -1;
};

// Routing taps: the order of a token's K expert slots is not part of the routing contract
// (ops/router_topk.h: engines keep running-min slot order, others sort by weight), so
// mlp.experts.idx and mlp.experts.weight are compared with each token's slots in ascending
// expert order, on both sides, each side ordered by its own idx tap.
const std::string kIdx = ".mlp.experts.idx", kWeight = ".mlp.experts.weight";
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
bool is_routing(const std::string& tap) { return ends_with(tap, kIdx) || ends_with(tap, kWeight); }
std::string idx_tap_of(const std::string& tap) {
  return tap.substr(0, tap.size() - (ends_with(tap, kIdx) ? kIdx : kWeight).size()) + kIdx;
}

// v's rows of k slots put in the order that sorts idx's rows ascending (stable).
std::vector<double> in_expert_order(std::span<const double> v, std::span<const double> idx, int64_t k) {
  std::vector<double> out(v.size());
  std::vector<size_t> perm(static_cast<size_t>(k));
  for (size_t r = 0; r + size_t(k) <= v.size(); r += size_t(k)) {
    for (size_t j = 0; j < perm.size(); ++j) perm[j] = j;
    std::stable_sort(perm.begin(), perm.end(), [&](size_t x, size_t y) { return idx[r + x] < idx[r + y]; });
    for (size_t j = 0; j < perm.size(); ++j) out[r + j] = v[r + perm[j]];
  }
  return out;
}

// Both sides of a routing tap in expert order, when both dumps hold the layer's idx tap in the
// same layout (A: the tap, or the token's row of it; B: the tensor mapped to it for that token).
// Returns false (slot order kept) otherwise.
bool order_routing(const std::string& tap, const Pairing& pr, const SafetensorsFile& a, const SafetensorsFile& b,
                   const std::map<std::string, std::vector<Pairing>>& by_tap, std::vector<double>& va,
                   std::vector<double>& vb) {
  const std::string idx = idx_tap_of(tap);
  const TensorInfo* ia = a.find(idx);
  const auto it = by_tap.find(idx);
  if (!ia || it == by_tap.end()) return false;
  const auto ib = std::find_if(it->second.begin(), it->second.end(), [&](const Pairing& p) { return p.token == pr.token; });
  if (ib == it->second.end()) return false;
  std::vector<double> xa = values(*ia), xb = values(*b.find(ib->b_name));
  const int64_t rows = ia->shape.empty() ? 1 : ia->shape[0], k = rows > 0 ? ia->numel() / rows : 0;
  if (pr.token >= 0 && pr.token < rows) xa = std::vector<double>(xa.begin() + pr.token * k, xa.begin() + (pr.token + 1) * k);
  if (k <= 0 || xa.size() != va.size() || xb.size() != vb.size() || va.size() != vb.size()) return false;
  va = in_expert_order(va, xa, k), vb = in_expert_order(vb, xb, k);
  return true;
}

}  // namespace

int diff_dumps(const DiffOptions& opt) {
  SafetensorsFile a(opt.a), b(opt.b);
  std::optional<TapMap> map;
  if (!opt.map.empty()) map = TapMap::load(opt.map);
  std::printf("diff %s (A) vs %s (B)%s; a tap fails when max|A-B| / max|A| > %g or NaN/Inf differ\n", opt.a.c_str(),
              opt.b.c_str(), map ? (" with B's names mapped by " + opt.map).c_str() : "", opt.threshold);
  // B's tensors by the tap they stand for.
  std::map<std::string, std::vector<Pairing>> by_tap;
  std::vector<std::string> unmapped;
  for (const std::string& name : b.names_in_file_order()) {
    if (!map) {
      by_tap[name].push_back({name, -1});
      continue;
    }
    const std::optional<TapTarget> t = map->map(name);
    if (!t)
      unmapped.push_back(name);
    else
      by_tap[t->tap].push_back({name, t->token});
  }
  std::printf("%-56s %-14s %12s %12s %12s %10s  %s\n", "tap (A's forward order)", "shape", "max|A-B|", "max|A|", "rel",
              "cosine", "verdict");
  std::string first;
  int compared = 0, failed = 0;
  std::set<std::string> used;
  for (const std::string& name : a.names_in_file_order()) {
    const TensorInfo& ta = *a.find(name);
    auto it = by_tap.find(name);
    if (it == by_tap.end()) {
      std::printf("%-56s %-14s %s\n", name.c_str(), ta.shape_string().c_str(), "only in A");
      continue;
    }
    used.insert(name);
    const std::vector<double> va = values(ta);
    for (const Pairing& pr : it->second) {
      const TensorInfo& tb = *b.find(pr.b_name);
      std::string label = name;
      if (map) label += " <- " + pr.b_name;
      std::span<const double> sa(va);
      std::string problem;
      if (pr.token >= 0) {
        const int64_t rows = ta.shape.empty() ? 1 : ta.shape[0];
        const int64_t cols = rows > 0 ? ta.numel() / rows : 0;
        if (pr.token >= rows)
          problem = "token " + std::to_string(pr.token) + " but A has " + std::to_string(rows) + " rows";
        else if (tb.numel() != cols)
          problem = "B has " + std::to_string(tb.numel()) + " values, one row of A " + std::to_string(cols);
        else
          sa = sa.subspan(size_t(pr.token * cols), size_t(cols));
      } else if (tb.numel() != ta.numel()) {
        problem = "shape differs: B is " + tb.shape_string();
      }
      ++compared;
      if (!problem.empty()) {
        std::printf("%-56s %-14s %s\n", label.c_str(), ta.shape_string().c_str(), problem.c_str());
        ++failed;
        if (first.empty()) first = label;
        continue;
      }
      std::vector<double> vb = values(tb);
      std::vector<double> va_row(sa.begin(), sa.end());
      if (is_routing(name) && order_routing(name, pr, a, b, by_tap, va_row, vb)) sa = va_row;
      const DiffStats d = diff_stats(sa, vb);
      const bool bad = d.special > 0 || d.rel > opt.threshold;
      failed += bad;
      if (bad && first.empty()) first = label + (pr.token >= 0 ? " (token " + std::to_string(pr.token) + ")" : "");
      const std::string shape = pr.token >= 0 ? "row " + std::to_string(pr.token) : ta.shape_string();
      std::printf("%-56s %-14s %12.4g %12.4g %12.4g %10.7f  %s%s\n", label.c_str(), shape.c_str(), d.maxd, d.maxa,
                  d.rel, d.cosine, bad ? "OVER" : "ok",
                  d.special ? (" (" + std::to_string(d.special) + " NaN/Inf mismatches)").c_str() : "");
    }
  }
  for (const auto& [tap, prs] : by_tap)
    if (!used.count(tap))
      for (const Pairing& pr : prs)
        std::printf("%-56s %s\n", (map ? tap + " <- " + pr.b_name : tap).c_str(), "only in B");
  for (const std::string& n : unmapped) std::printf("%-56s %s\n", n.c_str(), "in B, not mapped to a tap");
  if (!first.empty()) std::printf("first tap over threshold: %s\n", first.c_str());
  std::printf("%d passed, %d failed\n", compared - failed, failed);
  // A gate that compared nothing must not pass: the names (or the mapping) are wrong.
  MOE_CHECK(compared > 0, "diff: no tensor of " << opt.b << " lines up with a tap of " << opt.a
                                                 << (map ? " through " + opt.map : std::string(" (other names: --map)")));
  return failed ? 1 : 0;
}

}  // namespace moe
