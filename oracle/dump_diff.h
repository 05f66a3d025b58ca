// Two dumps lined up tap by tap (`moeoracle diff`, the Python module's diff): A is the reference,
// B the candidate, whose tensors are A's tap names or, through a TapMap, another engine's names
// (one tap may then be a whole tensor or one token's row of it). A tap fails when NaN/Inf differ
// or max|A-B| / max|A| exceeds the threshold.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "oracle/safetensors.h"
#include "oracle/tap_map.h"

namespace moe {

struct TapDiff {
  enum class Kind {
    Compared,  // the numbers below are meaningful
    Mismatch,  // lined up but not comparable (sizes differ, token out of range): fails
    OnlyInA,   // A's tap with no B tensor
    OnlyInB,   // B's tensor for a tap A does not have
    Unmapped,  // B's tensor that no rule of the map names
  };
  Kind kind = Kind::Compared;
  std::string tap;        // A's tap (for Unmapped: empty)
  std::string b_name;     // B's tensor (for OnlyInA: empty)
  int64_t token = -1;     // >= 0: B's tensor is this token's row of the tap
  std::string shape;      // A's shape, "[2, 256]"
  std::string problem;    // Mismatch: why
  double max_abs_diff = 0, max_abs_a = 0, rel = 0, cosine = 1;
  int64_t special = 0;    // NaN/Inf mismatches
  bool failed = false;    // Compared over the threshold (or NaN/Inf differ), or Mismatch
};

struct DumpDiff {
  std::vector<TapDiff> taps;  // A's forward order (file order), then only-in-B, then unmapped
  int64_t first_failed = -1;  // index into taps of the first failing one; -1: none
  int compared = 0, failed = 0;
};

DumpDiff diff_dumps(const SafetensorsFile& a, const SafetensorsFile& b, const TapMap* map, double threshold);

// The values of a numeric tensor (f32, f64, bf16, f16, i32, u32, i64, u8) as doubles; another
// dtype is a moe::Error naming the file and the tensor.
std::vector<double> tensor_values(const TensorInfo& t);

// A routing tap's rows of k slots put in the order that sorts the idx tap's rows ascending
// (stable): the routing contract leaves slot order free, so routing is compared expert by expert.
template <class V, class I>
V in_expert_order(const V& v, const I& idx, int64_t k) {
  V out(v.size());
  std::vector<size_t> perm(static_cast<size_t>(k));
  for (size_t r = 0; r + size_t(k) <= v.size(); r += size_t(k)) {
    for (size_t j = 0; j < perm.size(); ++j) perm[j] = j;
    std::stable_sort(perm.begin(), perm.end(), [&](size_t x, size_t y) { return idx[r + x] < idx[r + y]; });
    for (size_t j = 0; j < perm.size(); ++j) out[r + j] = v[r + perm[j]];
  }
  return out;
}

// Two values that agree where one is not finite: equal (the same infinity), or both NaN.
inline bool same_nonfinite(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

}  // namespace moe
