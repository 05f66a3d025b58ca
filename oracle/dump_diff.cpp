#include "oracle/dump_diff.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <span>

#include "core/bf16.h"
#include "core/check.h"
#include "core/half.h"

namespace moe {
namespace {

void diff_stats(std::span<const double> va, std::span<const double> vb, TapDiff& d) {
  double dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < va.size(); ++i) {
    const bool sa = !std::isfinite(va[i]), sb = !std::isfinite(vb[i]);
    if (sa || sb) {
      if (!(sa && sb && (va[i] == vb[i] || (std::isnan(va[i]) && std::isnan(vb[i]))))) ++d.special;
      continue;
    }
    d.max_abs_diff = std::max(d.max_abs_diff, std::fabs(va[i] - vb[i]));
    d.max_abs_a = std::max(d.max_abs_a, std::fabs(va[i]));
    dot += va[i] * vb[i], na += va[i] * va[i], nb += vb[i] * vb[i];
  }
  d.rel = d.max_abs_a > 0 ? d.max_abs_diff / d.max_abs_a : (d.max_abs_diff > 0 ? INFINITY : 0.0);
  d.cosine = na > 0 && nb > 0 ? dot / std::sqrt(na * nb) : (na == nb ? 1.0 : 0.0);
}

// One B tensor lined up with a tap of A (all of it, or one token's row).
struct Pairing {
  std::string b_name;
  int64_t token = -1;
};

using ByTap = std::map<std::string, std::vector<Pairing>>;

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

// Both sides of a routing tap in expert order, when both dumps hold the layer's idx tap in the
// same layout (A: the tap, or the token's row of it; B: the tensor mapped to it for that token).
// Returns false (slot order kept) otherwise.
bool order_routing(const std::string& tap, const Pairing& pr, const SafetensorsFile& a, const SafetensorsFile& b,
                   const ByTap& by_tap, std::vector<double>& va, std::vector<double>& vb) {
  const std::string idx = idx_tap_of(tap);
  const TensorInfo* ia = a.find(idx);
  const auto it = by_tap.find(idx);
  if (!ia || it == by_tap.end()) return false;
  const auto ib =
      std::find_if(it->second.begin(), it->second.end(), [&](const Pairing& p) { return p.token == pr.token; });
  if (ib == it->second.end()) return false;
  std::vector<double> xa = tensor_values(*ia), xb = tensor_values(*b.find(ib->b_name));
  const int64_t rows = ia->shape.empty() ? 1 : ia->shape[0], k = rows > 0 ? ia->numel() / rows : 0;
  if (pr.token >= 0 && pr.token < rows)
    xa = std::vector<double>(xa.begin() + pr.token * k, xa.begin() + (pr.token + 1) * k);
  if (k <= 0 || xa.size() != va.size() || xb.size() != vb.size() || va.size() != vb.size()) return false;
  va = in_expert_order(va, xa, k), vb = in_expert_order(vb, xb, k);
  return true;
}

// Compares tap `ta` (values va) with B's tensor of pairing `pr`.
TapDiff compare_one(const TensorInfo& ta, std::span<const double> va, const SafetensorsFile& a,
                    const SafetensorsFile& b, const ByTap& by_tap, const Pairing& pr, double threshold) {
  const TensorInfo& tb = *b.find(pr.b_name);
  TapDiff d;
  d.tap = ta.name, d.b_name = pr.b_name, d.token = pr.token, d.shape = ta.shape_string();
  std::span<const double> sa = va;
  if (pr.token >= 0) {
    const int64_t rows = ta.shape.empty() ? 1 : ta.shape[0];
    const int64_t cols = rows > 0 ? ta.numel() / rows : 0;
    if (pr.token >= rows)
      d.problem = "token " + std::to_string(pr.token) + " but A has " + std::to_string(rows) + " rows";
    else if (tb.numel() != cols)
      d.problem = "B has " + std::to_string(tb.numel()) + " values, one row of A " + std::to_string(cols);
    else
      sa = sa.subspan(size_t(pr.token * cols), size_t(cols));
  } else if (tb.numel() != ta.numel()) {
    d.problem = "shape differs: B is " + tb.shape_string();
  }
  if (!d.problem.empty()) {
    d.kind = TapDiff::Kind::Mismatch, d.failed = true;
    return d;
  }
  std::vector<double> vb = tensor_values(tb), va_rows(sa.begin(), sa.end());
  if (is_routing(ta.name) && order_routing(ta.name, pr, a, b, by_tap, va_rows, vb)) sa = va_rows;
  diff_stats(sa, vb, d);
  d.failed = d.special > 0 || d.rel > threshold;
  return d;
}

}  // namespace

std::vector<double> tensor_values(const TensorInfo& t) {
  const int64_t n = t.numel();
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* p = t.data + size_t(i) * dtype_size(t.dtype);
    switch (t.dtype) {
      case DType::F32: { float x; std::memcpy(&x, p, 4); v[size_t(i)] = x; break; }
      case DType::F64: { double x; std::memcpy(&x, p, 8); v[size_t(i)] = x; break; }
      case DType::BF16: { bf16 x; std::memcpy(&x, p, 2); v[size_t(i)] = bf16_to_f32(x); break; }
      case DType::F16: { uint16_t x; std::memcpy(&x, p, 2); v[size_t(i)] = f16_to_double(x); break; }
      case DType::I32: { int32_t x; std::memcpy(&x, p, 4); v[size_t(i)] = x; break; }
      case DType::U32: { uint32_t x; std::memcpy(&x, p, 4); v[size_t(i)] = x; break; }
      case DType::I64: { int64_t x; std::memcpy(&x, p, 8); v[size_t(i)] = double(x); break; }
      case DType::U8: v[size_t(i)] = *p; break;
      default: MOE_FAIL(t.file << ": tensor '" << t.name << "' has dtype " << dtype_name(t.dtype) << ", not supported here");
    }
  }
  return v;
}

DumpDiff diff_dumps(const SafetensorsFile& a, const SafetensorsFile& b, const TapMap* map, double threshold) {
  // B's tensors by the tap they stand for.
  ByTap by_tap;
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
  DumpDiff out;
  std::set<std::string> used;
  for (const std::string& name : a.names_in_file_order()) {
    const TensorInfo& ta = *a.find(name);
    auto it = by_tap.find(name);
    if (it == by_tap.end()) {
      TapDiff d;
      d.kind = TapDiff::Kind::OnlyInA, d.tap = name, d.shape = ta.shape_string();
      out.taps.push_back(d);
      continue;
    }
    used.insert(name);
    const std::vector<double> va = tensor_values(ta);
    for (const Pairing& pr : it->second) {
      out.taps.push_back(compare_one(ta, va, a, b, by_tap, pr, threshold));
      ++out.compared;
      if (out.taps.back().failed) {
        ++out.failed;
        if (out.first_failed < 0) out.first_failed = int64_t(out.taps.size()) - 1;
      }
    }
  }
  for (const auto& [tap, prs] : by_tap) {
    if (used.count(tap)) continue;
    for (const Pairing& pr : prs) {
      TapDiff d;
      d.kind = TapDiff::Kind::OnlyInB, d.tap = tap, d.b_name = pr.b_name, d.token = pr.token;
      out.taps.push_back(d);
    }
  }
  for (const std::string& n : unmapped) {
    TapDiff d;
    d.kind = TapDiff::Kind::Unmapped, d.b_name = n;
    out.taps.push_back(d);
  }
  // A gate that compared nothing must not pass: the names (or the mapping) are wrong.
  MOE_CHECK(out.compared > 0, "diff: no tensor of " << b.path() << " lines up with a tap of " << a.path()
                                                     << (map ? " through the map" : " (other names: --map)"));
  return out;
}

}  // namespace moe
