// `inspect` and `diff` over safetensors dumps.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "core/bf16.h"
#include "core/check.h"
#include "oracle/safetensors.h"
#include "run.h"

namespace moe {
namespace {

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

int diff_dumps(const DiffOptions& opt) {
  SafetensorsFile a(opt.a), b(opt.b);
  std::printf("diff %s (A) vs %s (B); a tap fails when max|A-B| / max|A| > %g or NaN/Inf differ\n", opt.a.c_str(),
              opt.b.c_str(), opt.threshold);
  std::printf("%-56s %-14s %12s %12s %12s %10s  %s\n", "tap (A's forward order)", "shape", "max|A-B|", "max|A|", "rel",
              "cosine", "verdict");
  std::string first;
  int compared = 0, failed = 0;
  for (const std::string& name : a.names_in_file_order()) {
    const TensorInfo& ta = *a.find(name);
    const TensorInfo* tb = b.find(name);
    if (!tb) {
      std::printf("%-56s %-14s %s\n", name.c_str(), ta.shape_string().c_str(), "only in A");
      continue;
    }
    if (ta.shape != tb->shape) {
      std::printf("%-56s %-14s shape differs: B is %s\n", name.c_str(), ta.shape_string().c_str(), tb->shape_string().c_str());
      ++failed, ++compared;
      if (first.empty()) first = name;
      continue;
    }
    const std::vector<double> va = values(ta), vb = values(*tb);
    double maxd = 0, maxa = 0, dot = 0, na = 0, nb = 0;
    int64_t special = 0;
    for (size_t i = 0; i < va.size(); ++i) {
      const bool sa = !std::isfinite(va[i]), sb = !std::isfinite(vb[i]);
      if (sa || sb) {
        if (!(sa && sb && (va[i] == vb[i] || (std::isnan(va[i]) && std::isnan(vb[i]))))) ++special;
        continue;
      }
      maxd = std::max(maxd, std::fabs(va[i] - vb[i]));
      maxa = std::max(maxa, std::fabs(va[i]));
      dot += va[i] * vb[i], na += va[i] * va[i], nb += vb[i] * vb[i];
    }
    const double rel = maxa > 0 ? maxd / maxa : (maxd > 0 ? INFINITY : 0.0);
    const double cosine = na > 0 && nb > 0 ? dot / std::sqrt(na * nb) : (na == nb ? 1.0 : 0.0);
    const bool bad = special > 0 || rel > opt.threshold;
    ++compared;
    failed += bad;
    if (bad && first.empty()) first = name;
    std::printf("%-56s %-14s %12.4g %12.4g %12.4g %10.7f  %s%s\n", name.c_str(), ta.shape_string().c_str(), maxd, maxa,
                rel, cosine, bad ? "OVER" : "ok",
                special ? (" (" + std::to_string(special) + " NaN/Inf mismatches)").c_str() : "");
  }
  for (const auto& [name, t] : b.tensors())
    if (!a.find(name)) std::printf("%-56s %-14s %s\n", name.c_str(), t.shape_string().c_str(), "only in B");
  if (!first.empty()) std::printf("first tap over threshold: %s\n", first.c_str());
  std::printf("%d passed, %d failed\n", compared - failed, failed);
  return failed ? 1 : 0;
}

}  // namespace moe
