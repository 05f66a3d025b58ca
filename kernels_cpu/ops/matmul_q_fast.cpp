// matmul_q_fast: Y = X W^T by tiles of W rows: dequantise the tile to f32 in the calling thread,
// then one cblas_sgemm for all tokens against the tile, threaded by OpenBLAS. One thread runtime
// only: OpenMP dequantisation alternating with OpenBLAS threads measured 5-10x slower on the
// shared 2-core CI machine (two pools of spinning threads handing the cores back and forth at
// every tile), and OpenMP over tiles would need OpenBLAS forced to one thread, a global setting.
//
// The tile holds kTileBytes of f32 weights: 2 MiB, the size of one core's L2 here, so the
// dequantised tile is written and then read by sgemm while it is still in cache (L2 or the
// shared LLC) instead of going through memory; the packed weights are read exactly once.
// Every dequantised weight is t = fma(q, s, b), the reference's term (exact rounding of q s + b),
// so the only difference from the reference is the order of sgemm's sums.
#include <cblas.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <vector>

#include "ops/matmul_q.h"
#include "ops/matvec_q.h"

namespace moe {
namespace {

constexpr int64_t kTileBytes = int64_t(2) << 20;
// Below this many tokens one fast matvec per token (reading the packed weights T times, 0.5-1 B
// per weight) beats dequantising to f32 (4 B per weight written and read again) for sgemm: the
// selfcheck measured sgemm 2-10x slower than per-token matvecs at T = 2..8.
constexpr int64_t kMinTokensForGemm = 16;

// Rows [r0, r0 + n) of W to f32, row-major [n, cols]. Bits is a template argument so that the
// code loop has a constant trip count and vectorises.
template <int Bits>
void dequant_rows(const QuantMatrix& W, int64_t r0, int64_t n, float* out) {
  constexpr int vpw = 32 / Bits;
  constexpr uint32_t mask = (1u << Bits) - 1u;
  const int64_t wpr = W.words_per_row(), gpr = W.groups_per_row(), words_per_group = W.group_size / vpw;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t r = r0 + i;
    const uint32_t* wr = W.w + r * wpr;
    float* o = out + i * W.cols;
    for (int64_t g = 0; g < gpr; ++g) {
      const float s = bf16_to_f32(W.scales[r * gpr + g]), b = bf16_to_f32(W.biases[r * gpr + g]);
      for (int64_t j = g * words_per_group; j < (g + 1) * words_per_group; ++j) {
        const uint32_t word = wr[j];
        for (int k = 0; k < vpw; ++k) o[j * vpw + k] = std::fma(float((word >> (k * Bits)) & mask), s, b);
      }
    }
  }
}

}  // namespace

void matmul_q_fast(const MatmulQParams& p, const QuantMatrix& W, std::span<const float> X, std::span<float> Y) {
  matmul_q_validate(p, W, X, Y);
  // cblas takes 32-bit ints (Debian's libopenblas0 is LP64).
  MOE_CHECK(p.tokens <= INT_MAX && p.rows <= INT_MAX && p.cols <= INT_MAX,
            "matmul_q: tokens=" << p.tokens << " rows=" << p.rows << " cols=" << p.cols
                                << ", expected each <= " << INT_MAX << " (cblas int)");
  if (p.tokens == 0 || p.rows == 0) return;
  if (p.tokens < kMinTokensForGemm) {
    MatvecQParams mp;
    mp.rows = p.rows, mp.cols = p.cols, mp.bits = p.bits, mp.group_size = p.group_size;
    for (int64_t t = 0; t < p.tokens; ++t)
      matvec_q_fast(mp, W, X.subspan(size_t(t * p.cols), size_t(p.cols)), Y.subspan(size_t(t * p.rows), size_t(p.rows)));
    return;
  }
  const int64_t tile_rows = std::clamp<int64_t>(kTileBytes / (4 * p.cols), 1, p.rows);
  std::vector<float> tile(tile_rows * p.cols);
  for (int64_t r0 = 0; r0 < p.rows; r0 += tile_rows) {
    const int64_t n = std::min(tile_rows, p.rows - r0);
    if (p.bits == 4) dequant_rows<4>(W, r0, n, tile.data());
    else if (p.bits == 2) dequant_rows<2>(W, r0, n, tile.data());
    else dequant_rows<8>(W, r0, n, tile.data());
    // Y[:, r0:r0+n] = X [tokens, cols] * tile^T [cols, n]; beta = 0 overwrites Y without reading it.
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(p.tokens), int(n), int(p.cols), 1.0f, X.data(),
                int(p.cols), tile.data(), int(p.cols), 0.0f, Y.data() + r0, int(p.rows));
  }
}

}  // namespace moe
