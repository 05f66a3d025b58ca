// matvec_q_fast: y = W x for MLX affine 2/4/8-bit W (shape contract in ops/matvec_q.h).
//
// Every term is the same value as in the reference: t = fma(q, s, b) (exact dequantised weight,
// docs/ops/quantized.md "Dequantisation") times x[c]; only the order of the sum differs (SIMD lanes, 2 partial sums per
// row, a tree at the end), so the error is that of a dot product of `cols` terms in another
// order, and NaN/Inf in x, scales or biases reach y exactly as in the reference.
//
// One binary, every CPU: Highway compiles this file once per target (SSE4, AVX2, AVX-512, NEON,
// SVE, ...; hwy/foreach_target.h) and picks the best the CPU runs at the first call
// (HWY_DYNAMIC_DISPATCH). No -march=native is needed for speed.
//
// Portable path (every target): a chunk is N consecutive words of a row (N = f32 lanes); lane j
// holds word j, and step n (0 .. 32/bits - 1) takes code n of every word: shift, mask, convert
// (exact, q <= 255), t = fma(q, s, b), acc = fma(t, x, acc). x is permuted once per call into
// that lane order (xt). A chunk lies inside one group (words per group >= N: s, b broadcast) or
// covers whole groups (fewer: s, b per lane by a table lookup of the staged f32 scales). Two rows
// share each xt load; two accumulators per row (steps alternate) keep four FMA chains apart.
// Words past the last whole chunk take the reference's scalar terms. The next block's words are
// prefetched by hand on both paths (rows_avx512 says why).
//
// AVX-512 path (targets AVX3 and AVX3_DL, group_size a multiple of 64, the checkpoints' 64): the
// row is walked in chunks of 64 columns, each chunk in 4 steps of 16 lanes.
//   4-bit: the chunk is 8 words, loaded into both halves of the vector; step k shifts lanes 0-7
//          by 8k and lanes 8-15 by 8k + 4, so lane L holds code n = 2k + L/8 of word L%8 in
//          its low 4 bits.
//          vpermps reads only the low 4 bits of each index, so one vpermps from a 16-entry
//          table lut[q] = fma(q, s, b) of the chunk's group gives t with no mask and no convert.
//   2-bit: the chunk is 4 words, broadcast 4 times; step k shifts lanes 4j..4j+3 by 8k + 2j, so
//          lane L holds code 4k + L/4 of word L%4 in bits 0-1, with the next codes above
//          them: the table is periodic, lut[i] = fma(i & 3, s, b).
//   8-bit: the chunk is 64 bytes in column order; step k widens 16 bytes to int32, converts
//          (exact, q <= 255) and t = fma(q, s, b).
// Four rows are processed together to share the xt loads and to give 8 independent FMA chains.
// Threads split the rows (OpenMP). Measured throughput: docs/benchmarks.md.
// Group sizes (or lane counts) that are not powers of two use the scalar loop (same terms).
// GCC 12's AVX-512 headers build masked intrinsics on _mm512_undefined_*(), which -Wuninitialized
// reports at every inlined use (GCC bug 105593, fixed in GCC 13): silence it for this file.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/matvec_q_fast.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <hwy/cache_control.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "ops/matvec_q.h"

#ifndef MOE_MATVEC_Q_FAST_ONCE
#define MOE_MATVEC_Q_FAST_ONCE
namespace moe::matvec_q_detail {

// The scalar loop: the reference's terms, summed into 8 partial sums (c mod 8), added pairwise.
inline void rows_generic(const QuantMatrix& W, const float* x, float* y, int64_t r0, int64_t r1) {
  const int64_t groups = W.groups_per_row();
  for (int64_t r = r0; r < r1; ++r) {
    const uint32_t* wr = W.w + r * W.words_per_row();
    float part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int64_t g = 0; g < groups; ++g) {
      const float s = bf16_to_f32(W.scales[r * groups + g]);
      const float b = bf16_to_f32(W.biases[r * groups + g]);
      for (int64_t c = g * W.group_size; c < (g + 1) * W.group_size; ++c) {
        const float t = std::fma(float(quant_code(wr, c, W.bits)), s, b);
        part[c & 7] = std::fma(t, x[c], part[c & 7]);
      }
    }
    y[r] = ((part[0] + part[4]) + (part[1] + part[5])) + ((part[2] + part[6]) + (part[3] + part[7]));
  }
}

inline bool pow2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

}  // namespace moe::matvec_q_detail
#endif  // MOE_MATVEC_Q_FAST_ONCE

HWY_BEFORE_NAMESPACE();
namespace moe::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// R rows [r0, r0 + R) on the portable path (x as given, xt permuted); sf/bfv: R x (gpr + N)
// staging floats.
template <int Bits, int R>
void RowsHwy(const QuantMatrix& W, const float* x, const float* xt, float* y, int64_t r0, float* sf, float* bfv) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::RebindToUnsigned<decltype(df)> du;
  constexpr int kCpw = 32 / Bits;
  const int64_t N = int64_t(hn::Lanes(df));
  const int64_t wpr = W.words_per_row(), gpr = W.groups_per_row(), wpg = W.group_size / kCpw;
  const int64_t chunks = wpr / N, stride = gpr + N;
  for (int i = 0; i < R; ++i)
    for (int64_t g = 0; g < gpr; ++g) {
      sf[i * stride + g] = bf16_to_f32(W.scales[(r0 + i) * gpr + g]);
      bfv[i * stride + g] = bf16_to_f32(W.biases[(r0 + i) * gpr + g]);
    }
  // Lane j of a chunk that covers several groups reads group j / wpg of it (wpg a power of two).
  int shift = 0;
  while ((int64_t(1) << shift) < wpg) ++shift;
  const auto idx = hn::IndicesFromVec(df, hn::ShiftRightSame(hn::Iota(di, 0), shift));
  const bool per_lane = wpg < N;
  const auto mask = hn::Set(du, (1u << Bits) - 1u);
  decltype(hn::Zero(df)) acc[R][2];
  for (int i = 0; i < R; ++i) acc[i][0] = acc[i][1] = hn::Zero(df);
  // The next R rows' words, a cache line at a time, spread over this block's chunks (as on the
  // AVX-512 path: without it one thread of 8-bit rows waits on memory, see rows_avx512).
  const int64_t next_rows = std::clamp<int64_t>(W.rows - (r0 + R), 0, R);
  const uint32_t* next_w = W.w + (r0 + R) * wpr;
  for (int64_t c = 0; c < chunks; ++c) {
    if ((c * N) % 16 == 0)
      for (int i = 0; i < next_rows; ++i) hwy::Prefetch(next_w + i * wpr + c * N);
    const int64_t g = c * N / wpg;
    decltype(hn::Zero(df)) s[R], b[R];
    hn::Vec<decltype(du)> words[R];
    for (int i = 0; i < R; ++i) {
      s[i] = per_lane ? hn::TableLookupLanes(hn::LoadU(df, sf + i * stride + g), idx) : hn::Set(df, sf[i * stride + g]);
      b[i] = per_lane ? hn::TableLookupLanes(hn::LoadU(df, bfv + i * stride + g), idx) : hn::Set(df, bfv[i * stride + g]);
      words[i] = hn::LoadU(du, W.w + (r0 + i) * wpr + c * N);
    }
    const float* xc = xt + c * kCpw * N;
    // Step n, unrolled at compile time (immediate shifts, accumulators in registers).
    const auto step = [&]<int n>() {
      const auto x = hn::LoadU(df, xc + n * N);
      for (int i = 0; i < R; ++i) {
        const auto q = hn::ConvertTo(df, hn::BitCast(di, hn::And(hn::ShiftRight<Bits * n>(words[i]), mask)));
        acc[i][n & 1] = hn::MulAdd(hn::MulAdd(q, s[i], b[i]), x, acc[i][n & 1]);
      }
    };
    [&]<int... n>(std::integer_sequence<int, n...>) { (step.template operator()<n>(), ...); }(
        std::make_integer_sequence<int, kCpw>{});
  }
  // Words past the last whole chunk: the reference's terms, one by one.
  for (int i = 0; i < R; ++i) {
    float tail = 0.0f;
    const uint32_t* wr = W.w + (r0 + i) * wpr;
    for (int64_t j = chunks * N; j < wpr; ++j)
      for (int n = 0; n < kCpw; ++n) {
        const float t = std::fma(float((wr[j] >> (Bits * n)) & ((1u << Bits) - 1u)), sf[i * stride + j / wpg],
                                 bfv[i * stride + j / wpg]);
        tail = std::fma(t, x[j * kCpw + n], tail);
      }
    y[r0 + i] = hn::GetLane(hn::SumOfLanes(df, hn::Add(acc[i][0], acc[i][1]))) + tail;
  }
}

template <int Bits>
void MatvecHwy(const QuantMatrix& W, const float* x, float* y) {
  const hn::ScalableTag<float> df;
  constexpr int kCpw = 32 / Bits;
  const int64_t N = int64_t(hn::Lanes(df)), wpr = W.words_per_row(), chunks = wpr / N;
  // xt: x in lane order, chunk by chunk: lane j of step n is column (c N + j) kCpw + n.
  std::vector<float> xt(size_t(chunks * N * kCpw));
  for (int64_t c = 0; c < chunks; ++c)
    for (int n = 0; n < kCpw; ++n)
      for (int64_t j = 0; j < N; ++j) xt[size_t((c * kCpw + n) * N + j)] = x[(c * N + j) * kCpw + n];
  constexpr int R = 2;
  const int64_t blocks = W.rows / R, stride = W.groups_per_row() + N;
#pragma omp parallel if (W.rows * W.cols >= (1 << 16))
  {
    std::vector<float> stage(size_t(4 * R * stride));
    float* sf = stage.data();
    float* bfv = sf + 2 * R * stride;
#pragma omp for schedule(static)
    for (int64_t blk = 0; blk < blocks; ++blk) RowsHwy<Bits, R>(W, x, xt.data(), y, blk * R, sf, bfv);
#pragma omp single
    for (int64_t r = blocks * R; r < W.rows; ++r) RowsHwy<Bits, 1>(W, x, xt.data(), y, r, sf, bfv);
  }
}

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL

// Column (within its 64-column chunk) that lane L of step k covers; see the file comment.
int lane_column(int bits, int k, int L) {
  if (bits == 4) return (L % 8) * 8 + 2 * k + L / 8;
  if (bits == 2) return (L % 4) * 16 + 4 * k + L / 4;
  return 16 * k + L;  // 8-bit: column order
}

// Per (row, group): the table of dequantised values (4/2-bit) or the broadcast scale and bias
// (8-bit). Built once per group, so a group_size of 128 reuses it for two chunks.
template <int Bits>
struct GroupConst {
  __m512 lut;   // 4/2-bit: t for every vpermps index
  __m512 s, b;  // 8-bit
};

// The codes of one 64-column chunk of one row, prepared for the 4 steps.
template <int Bits>
struct Codes {
  __m512i v;      // 4/2-bit: the lanes described in the file comment
  __m128i b8[4];  // 8-bit: 16 bytes per step
};

// s and b are read from the f32 staging buffer below: a broadcast from memory is a pure load.
template <int Bits>
inline GroupConst<Bits> make_group(const float* s, const float* b) {
  GroupConst<Bits> gc;
  gc.s = _mm512_set1_ps(*s), gc.b = _mm512_set1_ps(*b);
  if constexpr (Bits == 4) {
    const __m512 q = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    gc.lut = _mm512_fmadd_ps(q, gc.s, gc.b);
  } else if constexpr (Bits == 2) {
    const __m512 q = _mm512_setr_ps(0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3);
    gc.lut = _mm512_fmadd_ps(q, gc.s, gc.b);
  }
  return gc;
}

// 4/2-bit: the chunk's words broadcast to every 256/128-bit lane straight from memory (a load,
// no shuffle); chunk_step shifts each lane by its own amount.
template <int Bits>
inline Codes<Bits> load_codes(const uint32_t* words) {
  Codes<Bits> cd;
  if constexpr (Bits == 4) {
    cd.v = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(words)));
  } else if constexpr (Bits == 2) {
    cd.v = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(words)));
  } else {
    for (int k = 0; k < 4; ++k) cd.b8[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(words + 4 * k));
  }
  return cd;
}

// Per-lane shift of step K: 4-bit lanes 0-7 take code 2K, lanes 8-15 code 2K + 1 of their word;
// 2-bit lanes 4j..4j+3 take code 4K + j.
template <int Bits, int K>
inline __m512i step_shift() {
  if constexpr (Bits == 4) {
    const int a = 8 * K, b = 8 * K + 4;
    return _mm512_setr_epi32(a, a, a, a, a, a, a, a, b, b, b, b, b, b, b, b);
  } else {
    const int a = 8 * K;
    return _mm512_setr_epi32(a, a, a, a, a + 2, a + 2, a + 2, a + 2, a + 4, a + 4, a + 4, a + 4, a + 6, a + 6, a + 6,
                             a + 6);
  }
}

// t for step k of a chunk: the dequantised weights of the 16 columns that xt holds for step k.
template <int Bits, int K>
inline __m512 chunk_step(const Codes<Bits>& cd, const GroupConst<Bits>& gc) {
  if constexpr (Bits == 8) {
    const __m512 q = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(cd.b8[K]));
    return _mm512_fmadd_ps(q, gc.s, gc.b);
  } else {
    return _mm512_permutexvar_ps(_mm512_srlv_epi32(cd.v, step_shift<Bits, K>()), gc.lut);
  }
}

// R rows [r0, r0 + R) over the whole row. acc[i][0] takes steps 0 and 2, acc[i][1] steps 1 and 3.
template <int Bits, int R>
void rows_avx512(const QuantMatrix& W, const float* xt, float* y, int64_t r0) {
  const int64_t wpr = W.words_per_row(), gpr = W.groups_per_row();
  const int64_t words_per_chunk = 64 * Bits / 32, chunks_per_group = W.group_size / 64;
  __m512 acc[R][2];
  for (int i = 0; i < R; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  // Scales and biases are widened 16 groups at a time into f32 (exact: bf16 is the high half of
  // the f32), two vector ops per 16 groups instead of a scalar widen and shuffle per group.
  alignas(64) float sf[R][16], bfv[R][16];
  // Software prefetch of the next R-row block (the next rows in memory, usually this thread's
  // next block): its scales and biases now, its codes spread over this block's chunks, so that
  // the R short streams of a narrow row (1 KiB at 2048 4-bit columns) do not wait on the
  // hardware prefetcher. One block ahead is microseconds ahead, far more than memory latency.
  // It was first kept for rows shorter than a page (on a 16-core Xeon it made 1 and 2 KiB rows much
  // faster and 4 KiB ones no faster); on a Zen 5 one thread at 4 and 8 KiB rows waited on memory
  // without it and 128 KiB rows did not lose with it, so it is on for every row length (figures:
  // records/benchmarks-history.md, "The 80 % target is not met" and "matvec_q: the next block
  // prefetched at every row length"; "Notes moved from code comments").
  // Addresses stay inside the matrix (next_rows may be fewer than R, or none).
  const int64_t next_rows = std::clamp<int64_t>(W.rows - (r0 + R), 0, R);
  const char* next_w = reinterpret_cast<const char*>(W.w + (r0 + R) * wpr);  // at most one past the end
  const int64_t next_bytes_per_chunk = R * words_per_chunk * 4, next_limit = next_rows * wpr * 4;
  if (next_rows > 0) {
    const char* ns = reinterpret_cast<const char*>(W.scales + (r0 + R) * gpr);
    const char* nb = reinterpret_cast<const char*>(W.biases + (r0 + R) * gpr);
    for (int64_t off = 0; off < next_rows * gpr * 2; off += 64) {
      _mm_prefetch(ns + off, _MM_HINT_T0);
      _mm_prefetch(nb + off, _MM_HINT_T0);
    }
  }
  for (int64_t g0 = 0; g0 < gpr; g0 += 16) {
    const int n = int(std::min<int64_t>(16, gpr - g0));
    const __mmask16 m = __mmask16((1u << n) - 1u);
    for (int i = 0; i < R; ++i) {
      const int64_t at = (r0 + i) * gpr + g0;
      const __m512i s16 = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, W.scales + at));
      const __m512i b16 = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, W.biases + at));
      _mm512_store_si512(sf[i], _mm512_slli_epi32(s16, 16));
      _mm512_store_si512(bfv[i], _mm512_slli_epi32(b16, 16));
    }
    for (int64_t g = g0; g < g0 + n; ++g) {
      GroupConst<Bits> gc[R];
      for (int i = 0; i < R; ++i) gc[i] = make_group<Bits>(&sf[i][g - g0], &bfv[i][g - g0]);
      for (int64_t c = g * chunks_per_group; c < (g + 1) * chunks_per_group; ++c) {
        for (int64_t off = c * next_bytes_per_chunk; off < (c + 1) * next_bytes_per_chunk && off < next_limit; off += 64)
          _mm_prefetch(next_w + off, _MM_HINT_T0);
        const float* xc = xt + c * 64;
        const __m512 x0 = _mm512_loadu_ps(xc), x1 = _mm512_loadu_ps(xc + 16);
        const __m512 x2 = _mm512_loadu_ps(xc + 32), x3 = _mm512_loadu_ps(xc + 48);
        for (int i = 0; i < R; ++i) {
          const Codes<Bits> cd = load_codes<Bits>(W.w + (r0 + i) * wpr + c * words_per_chunk);
          acc[i][0] = _mm512_fmadd_ps(chunk_step<Bits, 0>(cd, gc[i]), x0, acc[i][0]);
          acc[i][1] = _mm512_fmadd_ps(chunk_step<Bits, 1>(cd, gc[i]), x1, acc[i][1]);
          acc[i][0] = _mm512_fmadd_ps(chunk_step<Bits, 2>(cd, gc[i]), x2, acc[i][0]);
          acc[i][1] = _mm512_fmadd_ps(chunk_step<Bits, 3>(cd, gc[i]), x3, acc[i][1]);
        }
      }
    }
  }
  for (int i = 0; i < R; ++i) y[r0 + i] = _mm512_reduce_add_ps(_mm512_add_ps(acc[i][0], acc[i][1]));
}

template <int Bits>
void MatvecAvx512(const QuantMatrix& W, const float* x, float* y) {
  // xt: x in lane order, chunk by chunk (64 floats per chunk, 16 per step).
  std::vector<float> xt(W.cols);
  for (int64_t c = 0; c < W.cols / 64; ++c)
    for (int k = 0; k < 4; ++k)
      for (int L = 0; L < 16; ++L) xt[c * 64 + k * 16 + L] = x[c * 64 + lane_column(Bits, k, L)];
  const int64_t blocks = W.rows / 4;
  // Threads only pay above ~64K weights (a 512x2048 4-bit matrix is 512 KiB: worth it).
#pragma omp parallel for schedule(static) if (W.rows * W.cols >= (1 << 16))
  for (int64_t blk = 0; blk < blocks; ++blk) rows_avx512<Bits, 4>(W, xt.data(), y, blk * 4);
  for (int64_t r = blocks * 4; r < W.rows; ++r) rows_avx512<Bits, 1>(W, xt.data(), y, r);
}


#endif  // HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL

// The target's matvec: AVX-512's table path where it applies, else the portable one, else the
// scalar loop (group sizes whose words per group and lanes are not powers of two).
void MatvecQ(const QuantMatrix& W, const float* x, float* y) {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  if (W.group_size % 64 == 0) {
    if (W.bits == 4) return MatvecAvx512<4>(W, x, y);
    if (W.bits == 2) return MatvecAvx512<2>(W, x, y);
    return MatvecAvx512<8>(W, x, y);
  }
#endif
  // The chunk walk needs words per group and lanes to divide one another (SVE may have, e.g.,
  // 12 lanes).
  const int64_t wpg = W.group_size / W.values_per_word();
  if (matvec_q_detail::pow2(wpg) && matvec_q_detail::pow2(int64_t(hn::Lanes(hn::ScalableTag<float>())))) {
    if (W.bits == 4) return MatvecHwy<4>(W, x, y);
    if (W.bits == 2) return MatvecHwy<2>(W, x, y);
    return MatvecHwy<8>(W, x, y);
  }
  const int64_t rows_per_block = 16, blocks = (W.rows + rows_per_block - 1) / rows_per_block;
#pragma omp parallel for schedule(static) if (W.rows * W.cols >= (1 << 16))
  for (int64_t blk = 0; blk < blocks; ++blk)
    matvec_q_detail::rows_generic(W, x, y, blk * rows_per_block, std::min(W.rows, (blk + 1) * rows_per_block));
}

}  // namespace moe::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace moe {

HWY_EXPORT(MatvecQ);

void matvec_q_fast(const MatvecQParams& p, const QuantMatrix& W, std::span<const float> x, std::span<float> y) {
  matvec_q_validate(p, W, x, y);
  HWY_DYNAMIC_DISPATCH(MatvecQ)(W, x.data(), y.data());
}

}  // namespace moe
#endif  // HWY_ONCE
