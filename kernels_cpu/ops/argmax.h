// argmax: the first index of the maximum of each row: greedy token selection
// (docs/ops/README.md "Scalar helpers" `argmax`, CPU-C / VK sampling).
//
// Shape contract:
//   x   [rows, n] f32, row-major      rows = tokens, n = vocabulary (248320 for Qwen3.5/3.6)
//   idx [rows] int32                  idx[r] in [0, n)
//   idx[r] = the smallest i with x[r][i] > x[r][j] for no j, found by a scan with strict `>`
//   (so on exact ties the lowest index wins; -0.0 and +0.0 are equal).
// NaN (numpy.argmax / torch.argmax semantics): a NaN counts as the maximum, so a row holding a
// NaN returns the index of its first NaN. +-inf are ordinary values.
// Every tier is exact (comparisons only; Acc is irrelevant and exists for the common template).
#pragma once
#include <cstdint>
#include <span>

namespace moe {

struct ArgmaxParams {
  int64_t rows = 1;
  int64_t n = 0;
  template <class F>
  void visit(F&& f) const {
    f("rows", rows), f("n", n);
  }
};

template <class Acc>
void argmax_ref(const ArgmaxParams& p, std::span<const float> x, std::span<int32_t> idx);
void argmax_fast(const ArgmaxParams& p, std::span<const float> x, std::span<int32_t> idx);

// Shared by every tier: argument validation with messages naming the op.
void argmax_validate(const ArgmaxParams& p, std::span<const float> x, std::span<int32_t> idx);

}  // namespace moe
