// matmul_q_fast: Y = X W^T for MLX affine 2/4/8-bit W and T tokens (prefill; shape contract in
// ops/matmul_q.h).
//
// Every term is the reference's: the dequantised weight t = fma(q, s, b) (exact rounding of
// q s + b, the same value as in matvec_q_ref) times x; only the order of the sum differs, so the
// error is that of a dot product of `cols` terms in another order and NaN/Inf propagate as in
// the reference. Nothing is padded (no 0 x Inf), and every (row, token) sum is computed the same
// way whatever the thread count or token count: results do not depend on either.
//
// T = 1 is the matvec (bandwidth bound, matvec_q_fast). Otherwise, compiled once per SIMD target
// by Highway and dispatched at run time (see matvec_q_fast.cpp), N = f32 lanes:
//  - threads own contiguous runs of row blocks (kR rows each), so each thread dequantises its
//    own rows only, once per k-panel and token super-block;
//  - the columns are walked in k-panels of kPanelCols, so that the X panel of a super-block of up
//    to kTokenBlock tokens (64 x 1024 x 4 B = 256 KiB) stays in this core's L2 and a block's
//    dequantised rows (kR x 1024 x 4 B <= 16 KiB) in L1 while every token is multiplied with it;
//  - dequantisation is matvec_q's portable path written to a buffer: a chunk is N consecutive
//    words, lane j holds word j, step n takes code n of each (shift, mask, convert, fma); on
//    AVX-512 for 4/2-bit codes and group sizes that are multiples of 64, its table path instead
//    (DequantLut: shift, permute; T = 2..4 10-17 % faster). X is copied once per call into the
//    same column order (xt), so the product is a plain dot product of two contiguous float
//    arrays per (row, token);
//  - the product is a register tile of kR rows x kTk tokens of vector accumulators along k
//    (kR + kTk loads per kR x kTk FMAs), reduced across lanes at the end of each panel and added
//    to Y (the panel's partial sums, in panel order).
// Words past the last whole chunk, and every word when words per group or N are not powers of
// two (the chunk walk needs them to divide one another), are buffered in plain column order with
// the reference's scalar terms; the product itself does not care about the order.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/matmul_q_fast.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <hwy/aligned_allocator.h>
#include <hwy/cache_control.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include "ops/matmul_q.h"
#include "ops/matvec_q.h"

#ifndef MOE_MATMUL_Q_FAST_ONCE
#define MOE_MATMUL_Q_FAST_ONCE
namespace moe::matmul_q_detail {

constexpr int64_t kPanelCols = 1024;
constexpr int64_t kTokenBlock = 64;
// Rows-outer order (ThreadRows) when a token super-block's xt is at most this many floats (256 KiB).
constexpr int64_t kRowsOuterFloats = int64_t(64) << 10;

inline bool pow2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

// Where each column of a row sits in the buffers (dequantised W rows and xt rows alike): words
// [0, chunk_words) by chunks of N words in lane order, the rest in column order. Both orders keep
// a chunk's columns inside the chunk's own column range, so a panel of whole chunks is a
// contiguous range of positions.
struct Layout {
  int cpw = 8;               // codes per word
  int64_t N = 1;             // f32 lanes
  int64_t wpr = 0, wpg = 0;  // words per row, per group
  int64_t chunk_words = 0;   // a multiple of N
  int64_t panel_words = 0;   // a multiple of N
  int64_t stride = 0;        // floats per xt row (cols rounded up to a cache line)
  bool lut64 = false;        // AVX-512 table order instead (see DequantLut)

  Layout(const QuantMatrix& W, int64_t lanes, bool avx512)
      : cpw(32 / W.bits), N(lanes), wpr(W.words_per_row()) {
    wpg = W.group_size / cpw;
    chunk_words = pow2(wpg) && pow2(N) ? wpr / N * N : 0;
    panel_words = std::max<int64_t>(N, kPanelCols / cpw / N * N);
    stride = (W.cols + 15) / 16 * 16;
    lut64 = avx512 && W.bits != 8 && W.group_size % 64 == 0;  // then every word is in 64-column chunks
  }
  int64_t pos(int64_t c) const {
    if (lut64) {  // column cc of a 64-column chunk: code n of word w; lane L of step k (DequantLut)
      const int64_t cc = c % 64, w = cc / cpw, n = cc % cpw;
      const int64_t k = cpw == 8 ? n / 2 : n / 4, lane = cpw == 8 ? w + 8 * (n % 2) : w + 4 * (n % 4);
      return c - cc + 16 * k + lane;
    }
    const int64_t j = c / cpw;
    if (j >= chunk_words) return c;
    return ((j / N) * cpw + c % cpw) * N + j % N;
  }
};

}  // namespace moe::matmul_q_detail
#endif  // MOE_MATMUL_Q_FAST_ONCE

HWY_BEFORE_NAMESPACE();
namespace moe::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using matmul_q_detail::Layout;

// Register tile: kR x kTk accumulators + kR row vectors + one x vector must fit the register file
// (16 vectors on SSE4/AVX2, 32 on AVX-512 and NEON/SVE).
#if HWY_ARCH_X86 && HWY_TARGET > HWY_AVX3
constexpr int kR = 3, kTk = 4;
#else
constexpr int kR = 6, kTk = 4;
#endif

// R rows (stride ws) times TT tokens (stride xs) over n floats; out[j * R + i] = the sum for row
// i, token j: the vector part by lanes, a lane reduction, then the scalar remainder.
template <int R, int TT>
void Tile(const float* HWY_RESTRICT w, int64_t ws, const float* HWY_RESTRICT x, int64_t xs, int64_t n, float* out) {
  const hn::ScalableTag<float> df;
  const int64_t N = int64_t(hn::Lanes(df)), nv = n / N * N;
  decltype(hn::Zero(df)) acc[R][TT];
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < TT; ++j) acc[i][j] = hn::Zero(df);
  for (int64_t k = 0; k < nv; k += N) {
    decltype(hn::Zero(df)) wv[R];
    for (int i = 0; i < R; ++i) wv[i] = hn::LoadU(df, w + i * ws + k);
    for (int j = 0; j < TT; ++j) {
      const auto xv = hn::LoadU(df, x + j * xs + k);
      for (int i = 0; i < R; ++i) acc[i][j] = hn::MulAdd(wv[i], xv, acc[i][j]);
    }
  }
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < TT; ++j) {
      float s = hn::GetLane(hn::SumOfLanes(df, acc[i][j]));
      for (int64_t k = nv; k < n; ++k) s = std::fma(w[i * ws + k], x[j * xs + k], s);
      out[j * R + i] = s;
    }
}

using TileFn = void (*)(const float*, int64_t, const float*, int64_t, int64_t, float*);

template <int R, size_t... J>
constexpr std::array<TileFn, kTk> TileRow(std::index_sequence<J...>) {
  return {&Tile<R, int(J) + 1>...};
}
template <size_t... I>
constexpr std::array<std::array<TileFn, kTk>, kR> TileTable(std::index_sequence<I...>) {
  return {TileRow<int(I) + 1>(std::make_index_sequence<kTk>())...};
}
// kTiles[R - 1][TT - 1]: the tile for the last, partial row block and token block too.
constexpr auto kTiles = TileTable(std::make_index_sequence<kR>());

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
// AVX-512, 4/2-bit, group_size a multiple of 64: matvec_q_fast's table path written to the buffer.
// A 64-column chunk is 8 (4-bit) or 4 (2-bit) words broadcast to every 256/128-bit lane; step k
// (0..3) shifts each lane by its own amount so that lane L holds the code of column
// (L % 8) 8 + 2k + L / 8 (4-bit) or (L % 4) 16 + 4k + L / 4 (2-bit) in its low 4 bits, and one
// vpermps from the group's table lut[i] = fma(i mod 2^bits, s, b) gives the 16 weights t: a shift,
// a permute and a store per 16 weights instead of shift, mask, convert, fma, store. The table
// holds exactly the reference's t = fma(q, s, b).
template <int Bits>
void DequantLut(const QuantMatrix& W, const Layout& L, int64_t r0, int R, int64_t w0, int64_t w1, float* buf,
                int64_t bs) {
  constexpr int kWordsPerChunk = 2 * Bits;  // 64 columns
  const __m512 iota = Bits == 4 ? _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
                                : _mm512_setr_ps(0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3);
  const __m512i sh0 = Bits == 4 ? _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 4, 4, 4, 4, 4, 4)
                                : _mm512_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2, 4, 4, 4, 4, 6, 6, 6, 6);
  const __m512i step = _mm512_set1_epi32(8);  // both widths: step k adds 8 k to every lane's shift
  const int64_t gpr = W.groups_per_row(), wpg = L.wpg;
  for (int i = 0; i < R; ++i) {
    const int64_t r = r0 + i;
    const uint32_t* wr = W.w + r * L.wpr;
    float* out = buf + i * bs - w0 * L.cpw;
    for (int64_t j = w0, g = w0 / wpg; j < w1; ++g) {  // group by group (no division per group)
      const int64_t end = std::min(w1, (g + 1) * wpg);
      const __m512 lut = _mm512_fmadd_ps(iota, _mm512_set1_ps(bf16_to_f32(W.scales[r * gpr + g])),
                                         _mm512_set1_ps(bf16_to_f32(W.biases[r * gpr + g])));
      for (; j < end; j += kWordsPerChunk) {
        const __m512i v = Bits == 4
                              ? _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(wr + j)))
                              : _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wr + j)));
        float* o = out + j * L.cpw;
        __m512i sh = sh0;
        for (int k = 0; k < 4; ++k, sh = _mm512_add_epi32(sh, step))
          _mm512_storeu_ps(o + 16 * k, _mm512_permutexvar_ps(_mm512_srlv_epi32(v, sh), lut));
      }
    }
  }
}
#endif

// Rows [r0, r0 + R), words [w0, w1) of W dequantised into buf (row stride bs; buf[0] is column
// w0 * cpw), in the Layout's order. stage: 2 x (groups of the panel + N) floats.
template <int Bits>
void DequantPanel(const QuantMatrix& W, const Layout& L, int64_t r0, int R, int64_t w0, int64_t w1, float* buf,
                  int64_t bs, float* stage) {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  if constexpr (Bits != 8)
    if (L.lut64) return DequantLut<Bits>(W, L, r0, R, w0, w1, buf, bs);
#endif
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::RebindToUnsigned<decltype(df)> du;
  constexpr int kCpw = 32 / Bits;
  constexpr uint32_t kMask = (1u << Bits) - 1u;
  const int64_t N = L.N, gpr = W.groups_per_row(), wv = std::clamp(L.chunk_words, w0, w1);
  const int64_t g0 = w0 / L.wpg, groups = (w1 - 1) / L.wpg - g0 + 1;
  const bool per_lane = L.wpg < N;  // a chunk covers N / wpg whole groups
  int shift = 0;
  while ((int64_t(1) << shift) < L.wpg) ++shift;
  const auto idx = hn::IndicesFromVec(df, hn::ShiftRightSame(hn::Iota(di, 0), shift));
  const auto mask = hn::Set(du, kMask);
  float* sf = stage;
  float* bfv = stage + groups + N;
  for (int i = 0; i < R; ++i) {
    const int64_t r = r0 + i;
    const uint32_t* wr = W.w + r * L.wpr;
    const bf16* sc = W.scales + r * gpr;
    const bf16* bi = W.biases + r * gpr;
    float* out = buf + i * bs - w0 * kCpw;  // out[c]: column c's position (c in the panel)
    for (int64_t g = 0; g < groups; ++g) sf[g] = bf16_to_f32(sc[g0 + g]), bfv[g] = bf16_to_f32(bi[g0 + g]);
    for (int64_t j = w0; j < wv; j += N) {
      const int64_t g = (j >> shift) - g0;  // wpg = 2^shift here: no division per chunk
      const auto s = per_lane ? hn::TableLookupLanes(hn::LoadU(df, sf + g), idx) : hn::Set(df, sf[g]);
      const auto b = per_lane ? hn::TableLookupLanes(hn::LoadU(df, bfv + g), idx) : hn::Set(df, bfv[g]);
      const auto words = hn::LoadU(du, wr + j);
      float* o = out + j * kCpw;
      const auto step = [&]<int n>() {
        const auto q = hn::ConvertTo(df, hn::BitCast(di, hn::And(hn::ShiftRight<Bits * n>(words), mask)));
        hn::StoreU(hn::MulAdd(q, s, b), df, o + n * N);
      };
      [&]<int... n>(std::integer_sequence<int, n...>) { (step.template operator()<n>(), ...); }(
          std::make_integer_sequence<int, kCpw>{});
    }
    for (int64_t j = wv; j < w1; ++j)
      for (int n = 0; n < kCpw; ++n)
        out[j * kCpw + n] = std::fma(float((wr[j] >> (Bits * n)) & kMask), sf[j / L.wpg - g0], bfv[j / L.wpg - g0]);
  }
}

// Token t of X into xt in the Layout's order.
void PermuteToken(const Layout& L, const float* x, float* xt, int64_t cols) {
  if (L.lut64) {
    for (int64_t c = 0; c < cols; ++c) xt[L.pos(c)] = x[c];
    return;
  }
  const int64_t N = L.N, cpw = L.cpw;
  for (int64_t ch = 0; ch < L.chunk_words / N; ++ch)
    for (int64_t n = 0; n < cpw; ++n)
      for (int64_t j = 0; j < N; ++j) xt[(ch * cpw + n) * N + j] = x[(ch * N + j) * cpw + n];
  std::copy(x + L.chunk_words * cpw, x + cols, xt + L.chunk_words * cpw);
}

struct Job {
  const QuantMatrix* W;
  const float* xt;  // [tokens, L.stride]
  float* Y;         // [tokens, rows]
  int64_t tokens;
};

// Per-thread scratch: a row block's dequantised panel, the scale/bias staging, a tile's sums.
struct Scratch {
  int64_t bs;  // floats per buffered row
  hwy::AlignedFreeUniquePtr<float[]> buf, stage;
  float part[kR * kTk];
  explicit Scratch(const Layout& L)
      : bs((L.panel_words * L.cpw + 15) / 16 * 16),
        buf(hwy::AllocateAligned<float>(size_t(kR * bs))),
        stage(hwy::AllocateAligned<float>(size_t(2 * (L.panel_words / L.wpg + 2 + L.N)))) {}
};

// Rows [r, r + R) x words [w0, w1) (one k-panel; R = kR or what is left before rb) for tokens
// [t0, t1): dequantise once, then
// every token tile; the panel's sums go to Y (the first panel writes, the others add).
template <int Bits>
void BlockPanel(const Job& job, const Layout& L, int64_t r, int64_t rb, int64_t w0, int64_t t0, int64_t t1,
                Scratch& sc) {
  const int R = int(std::min<int64_t>(kR, rb - r));
  const QuantMatrix& W = *job.W;
  const int64_t w1 = std::min(L.wpr, w0 + L.panel_words), c0 = w0 * L.cpw, n = (w1 - w0) * L.cpw;
  // The next row block's words of this panel, by hand: in either loop order of ThreadRows they are
  // needed a few block-panels later, and rows of < 4 KiB read in pieces never let the hardware
  // prefetcher ramp up (55 % of the time stalled on them at T = 4 without this).
  // Their scales and biases too (one dependent miss per group otherwise).
  const int64_t gpr = W.groups_per_row(), g0 = w0 / L.wpg, g1 = (w1 - 1) / L.wpg;
  for (int64_t r2 = r + kR; r2 < std::min(rb, r + 2 * kR); ++r2) {
    for (int64_t w = w0; w < w1; w += 16) hwy::Prefetch(W.w + r2 * L.wpr + w);  // 16 words a line
    for (int64_t g = g0; g <= g1; g += 32) {  // 32 bf16 a line
      hwy::Prefetch(W.scales + r2 * gpr + g);
      hwy::Prefetch(W.biases + r2 * gpr + g);
    }
  }
  DequantPanel<Bits>(W, L, r, R, w0, w1, sc.buf.get(), sc.bs, sc.stage.get());
  for (int64_t t = t0; t < t1; t += kTk) {
    const int TT = int(std::min<int64_t>(kTk, t1 - t));
    kTiles[R - 1][TT - 1](sc.buf.get(), sc.bs, job.xt + t * L.stride + c0, L.stride, n, sc.part);
    for (int j = 0; j < TT; ++j)
      for (int i = 0; i < R; ++i) {
        float& y = job.Y[(t + j) * W.rows + r + i];
        y = w0 == 0 ? sc.part[j * R + i] : y + sc.part[j * R + i];
      }
  }
}

// One thread's rows [ra, rb) for all tokens, by super-blocks of tokens. When the super-block's
// xt fits a quarter of a (1 MiB) L2, a row block walks all its panels in a row: its packed rows
// are read in order (the other order reads them in panel-sized pieces far apart). Otherwise the panel is
// the outer loop, so that the xt panel stays in L2 across row blocks.
template <int Bits>
void ThreadRows(const Job& job, const Layout& L, int64_t ra, int64_t rb) {
  Scratch sc(L);
  const int64_t supers = (job.tokens + matmul_q_detail::kTokenBlock - 1) / matmul_q_detail::kTokenBlock;
  const int64_t per_super = (job.tokens + supers - 1) / supers;
  const bool rows_outer = per_super * L.stride <= matmul_q_detail::kRowsOuterFloats;
  for (int64_t t0 = 0; t0 < job.tokens; t0 += per_super) {
    const int64_t t1 = std::min(job.tokens, t0 + per_super);
    if (rows_outer) {
      for (int64_t r = ra; r < rb; r += kR)
        for (int64_t w0 = 0; w0 < L.wpr; w0 += L.panel_words)
          BlockPanel<Bits>(job, L, r, rb, w0, t0, t1, sc);
      continue;
    }
    for (int64_t w0 = 0; w0 < L.wpr; w0 += L.panel_words)
      for (int64_t r = ra; r < rb; r += kR) BlockPanel<Bits>(job, L, r, rb, w0, t0, t1, sc);
  }
}

void MatmulQ(const QuantMatrix& W, const float* X, float* Y, int64_t tokens) {
  const Layout L(W, int64_t(hn::Lanes(hn::ScalableTag<float>())), HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL);
  const auto xt = hwy::AllocateAligned<float>(size_t(tokens * L.stride));
  const Job job{&W, xt.get(), Y, tokens};
  const int64_t blocks = (W.rows + kR - 1) / kR;
#pragma omp parallel if (W.rows * W.cols * tokens >= (int64_t(1) << 18))
  {
#pragma omp for schedule(static)
    for (int64_t t = 0; t < tokens; ++t) PermuteToken(L, X + t * W.cols, xt.get() + t * L.stride, W.cols);
    // (the implicit barrier: xt is complete)
    const int64_t nth = omp_get_num_threads(), tid = omp_get_thread_num();
    const int64_t ra = std::min(W.rows, blocks * tid / nth * kR), rb = std::min(W.rows, blocks * (tid + 1) / nth * kR);
    if (ra < rb) {
      if (W.bits == 4) ThreadRows<4>(job, L, ra, rb);
      else if (W.bits == 2) ThreadRows<2>(job, L, ra, rb);
      else ThreadRows<8>(job, L, ra, rb);
    }
  }
}

}  // namespace moe::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace moe {

HWY_EXPORT(MatmulQ);

void matmul_q_fast(const MatmulQParams& p, const QuantMatrix& W, std::span<const float> X, std::span<float> Y) {
  matmul_q_validate(p, W, X, Y);
  if (p.tokens == 0 || p.rows == 0) return;
  if (p.tokens == 1) {  // the matvec: bandwidth bound, its own kernel
    const MatvecQParams& mp = p;
    return matvec_q_fast(mp, W, X, Y);
  }
  HWY_DYNAMIC_DISPATCH(MatmulQ)(W, X.data(), Y.data(), p.tokens);
}

}  // namespace moe
#endif  // HWY_ONCE
