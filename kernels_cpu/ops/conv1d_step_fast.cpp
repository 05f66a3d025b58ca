// GCC 12 reports a false -Wmaybe-uninitialized inside Eigen's AVX-512 exp.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <Eigen/Core>
#include <algorithm>

#include "ops/conv1d_step.h"

namespace moe {

// Channels are independent across all tokens, so threads take blocks of channels and run
// every token on their block; each tap is one Eigen array expression over the block. Same
// formula as the scalar tiers (silu in the division form).
// Every arithmetic expression writes into a local (aligned) array and is then copied out:
// Eigen peels unaligned destinations with scalar code (std::exp) before its packet loop (its
// own exp), so writing straight into y would make the bits depend on the buffer's address and
// a T-token call would differ from T one-token calls.
void conv1d_step_fast(const Conv1dStepParams& p, std::span<const float> x, std::span<const float> w,
                      std::span<float> state, std::span<float> y) {
  conv1d_step_validate(p, x, w, state, y);
  const int64_t C = p.channels, K = p.kernel, T = p.tokens;
  using RowMajor = Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  // Taps as columns: wt.col(j) = w[:, j], contiguous.
  const Eigen::ArrayXXf wt = Eigen::Map<const RowMajor>(w.data(), C, K);
  constexpr int64_t kBlock = 1024;  // 4 KiB per state row and tap: a block's working set stays in L1
  const int64_t blocks = (C + kBlock - 1) / kBlock;
  using Seg = Eigen::Map<Eigen::ArrayXf>;
  using CSeg = Eigen::Map<const Eigen::ArrayXf>;
#pragma omp parallel for schedule(static) if (T * C >= (1 << 15))
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t c0 = b * kBlock, n = std::min(kBlock, C - c0);
    Eigen::ArrayXf acc(n), xt(n), yt(n);
    for (int64_t t = 0; t < T; ++t) {
      xt = CSeg(x.data() + t * C + c0, n);  // a copy: y may be the same buffer as x
      acc.setZero();
      for (int64_t j = 0; j < K - 1; ++j) acc += CSeg(state.data() + j * C + c0, n) * wt.col(j).segment(c0, n);
      acc += xt * wt.col(K - 1).segment(c0, n);
      yt = acc / (1.0f + (-acc).exp());
      for (int64_t j = 0; j + 1 < K - 1; ++j)
        Seg(state.data() + j * C + c0, n) = CSeg(state.data() + (j + 1) * C + c0, n);
      if (K > 1) Seg(state.data() + (K - 2) * C + c0, n) = xt;
      Seg(y.data() + t * C + c0, n) = yt;
    }
  }
}

}  // namespace moe
