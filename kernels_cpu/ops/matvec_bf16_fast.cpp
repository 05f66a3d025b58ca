// matvec_bf16_fast: y = W x for a bf16 W (shape contract in ops/matvec_bf16.h).
//
// Every term is the reference's: widen(w) * x (bf16 -> f32 is exact: a 16-bit shift), fused into
// the sum; only the order of the sum differs (4 x N lanes per row, a tree at the end, the scalar
// tail last), so the error is that of a dot product of `cols` terms in another order and NaN/Inf
// propagate as in the reference.
//
// Compiled once per SIMD target by Highway and dispatched at run time (see matvec_q_fast.cpp);
// N = f32 lanes of the target. Threads split the rows once there is enough work for the fork.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/matvec_bf16_fast.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <cmath>

#include "ops/matvec_bf16.h"

HWY_BEFORE_NAMESPACE();
namespace moe::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

float DotRow(const bf16* w, const float* x, int64_t cols) {
  const hn::ScalableTag<float> df;
  const hn::RebindToUnsigned<decltype(df)> du;
  const hn::Rebind<uint16_t, decltype(df)> d16;  // N bf16, widened to N u32 lanes
  const int64_t N = int64_t(hn::Lanes(df));
  const uint16_t* w16 = reinterpret_cast<const uint16_t*>(w);
  const auto load = [&](int64_t c) {
    return hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(d16, w16 + c))));
  };
  auto a0 = hn::Zero(df), a1 = hn::Zero(df), a2 = hn::Zero(df), a3 = hn::Zero(df);
  int64_t c = 0;
  for (; c + 4 * N <= cols; c += 4 * N) {
    a0 = hn::MulAdd(load(c), hn::LoadU(df, x + c), a0);
    a1 = hn::MulAdd(load(c + N), hn::LoadU(df, x + c + N), a1);
    a2 = hn::MulAdd(load(c + 2 * N), hn::LoadU(df, x + c + 2 * N), a2);
    a3 = hn::MulAdd(load(c + 3 * N), hn::LoadU(df, x + c + 3 * N), a3);
  }
  for (; c + N <= cols; c += N) a0 = hn::MulAdd(load(c), hn::LoadU(df, x + c), a0);
  float tail = 0.0f;
  for (; c < cols; ++c) tail = std::fma(bf16_to_f32(w[c]), x[c], tail);
  return hn::GetLane(hn::SumOfLanes(df, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3)))) + tail;
}

void MatvecBf16(const bf16* W, const float* x, float* y, int64_t rows, int64_t cols) {
#pragma omp parallel for schedule(static) if (rows * cols >= (1 << 16))
  for (int64_t r = 0; r < rows; ++r) y[r] = DotRow(W + r * cols, x, cols);
}

}  // namespace moe::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace moe {

HWY_EXPORT(MatvecBf16);

void matvec_bf16_fast(const MatvecBf16Params& p, std::span<const bf16> W, std::span<const float> x,
                      std::span<float> y) {
  matvec_bf16_validate(p, W, x, y);
  HWY_DYNAMIC_DISPATCH(MatvecBf16)(W.data(), x.data(), y.data(), p.rows, p.cols);
}

}  // namespace moe
#endif  // HWY_ONCE
