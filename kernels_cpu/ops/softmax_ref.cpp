#include <cmath>
#include <vector>

#include "core/math.h"
#include "core/softmax.h"
#include "ops/softmax.h"

namespace moe {

void softmax_validate(const SoftmaxParams& p, std::span<const float> x, std::span<const float> mask,
                      std::span<const float> y) {
  MOE_CHECK(p.rows >= 0 && p.cols > 0 && p.mask_rows >= 0,
            "softmax: rows=" << p.rows << " cols=" << p.cols << " mask_rows=" << p.mask_rows
                             << ", expected rows >= 0, cols > 0, mask_rows >= 0");
  MOE_CHECK(std::isfinite(p.scale), "softmax: scale=" << p.scale << ", expected finite");
  int64_t count = 0, mask_count = 0;
  MOE_CHECK(!__builtin_mul_overflow(p.rows, p.cols, &count) && !__builtin_mul_overflow(p.mask_rows, p.cols, &mask_count),
            "softmax: rows*cols or mask_rows*cols overflows int64 (rows=" << p.rows << " mask_rows=" << p.mask_rows
                                                                           << " cols=" << p.cols << ")");
  check_size(x, count, "softmax", "x");
  check_size(mask, mask_count, "softmax", "mask");
  check_size(y, count, "softmax", "y");
  MOE_CHECK(spans_same(y, x) || spans_disjoint(y, x), "softmax: y partially overlaps x, expected y on x or disjoint");
  MOE_CHECK(spans_disjoint(y, mask), "softmax: y overlaps mask, expected them disjoint");
}

template <class Acc>
void softmax_ref(const SoftmaxParams& p, std::span<const float> x, std::span<const float> mask, std::span<float> y) {
  softmax_validate(p, x, mask, y);
  std::vector<Acc> z(static_cast<size_t>(p.cols));
  for (int64_t r = 0; r < p.rows; ++r) {
    const float* xr = x.data() + r * p.cols;
    const float* mr = p.mask_rows > 0 ? mask.data() + (r % p.mask_rows) * p.cols : nullptr;
    for (int64_t c = 0; c < p.cols; ++c) z[size_t(c)] = Acc(xr[c]) * Acc(p.scale) + (mr ? Acc(mr[c]) : Acc(0));
    softmax_in_place(z.data(), p.cols);
    for (int64_t c = 0; c < p.cols; ++c) y[size_t(r * p.cols + c)] = float(z[size_t(c)]);
  }
}

template void softmax_ref<float>(const SoftmaxParams&, std::span<const float>, std::span<const float>,
                                 std::span<float>);
template void softmax_ref<double>(const SoftmaxParams&, std::span<const float>, std::span<const float>,
                                  std::span<float>);

}  // namespace moe
