// matvec_q_fast: y = W x for MLX affine 2/4/8-bit W (shape contract in ops/matvec_q.h).
//
// Every term is the same value as in the reference: t = fma(q, s, b) (exact dequantised weight,
// spec/ops.md §4.1) times x[c]; only the order of the sum differs (16 SIMD lanes, 2 partial
// sums per row, a tree at the end), so the error is that of a dot product of `cols` terms in
// another order, and NaN/Inf in x, scales or biases reach y exactly as in the reference.
//
// AVX-512 path (group_size a multiple of 64, the checkpoints' 64): the row is walked in chunks of
// 64 columns, each chunk in 4 steps of 16 lanes.
//   4-bit: the chunk is 8 words. Lanes 0-7 hold the words, lanes 8-15 the words >> 4; step k
//          shifts by 8k, so lane L holds code n = 2k + L/8 of word L%8 in its low 4 bits.
//          vpermps reads only the low 4 bits of each index, so one vpermps from a 16-entry
//          table lut[q] = fma(q, s, b) of the chunk's group gives t with no mask and no convert.
//   2-bit: the chunk is 4 words, broadcast 4 times and pre-shifted by 0, 2, 4, 6; step k shifts
//          by 8k, lane L holds code 4k + L/4 of word L%4 in bits 0-1, with the next codes
//          above them: the table is periodic, lut[i] = fma(i & 3, s, b).
//   8-bit: the chunk is 64 bytes in column order; step k widens 16 bytes to int32, converts
//          (exact, q <= 255) and t = fma(q, s, b).
// x is permuted once per call into that lane order (xt), so the inner loop is shift, vpermps,
// fma. Four rows are processed together to share the xt loads and to give 8 independent FMA
// chains (FMA latency 4 x 2 ports). Threads split the rows (OpenMP, blocks of 4 rows).
// Other group sizes, or a build without AVX-512, use the portable loop below (same terms).
#include <cmath>
#include <algorithm>
#include <cstring>
#include <vector>

#if defined(__AVX512F__)
// GCC 12's AVX-512 headers build masked intrinsics on _mm512_undefined_*(), which -Wuninitialized
// reports at every inlined use (GCC bug 105593, fixed in GCC 13): silence it for this file.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#endif

#include "ops/matvec_q.h"

namespace moe {
namespace {

// Portable path: the reference's terms, summed into 8 partial sums (c mod 8) that the compiler
// can keep in one vector register, then added pairwise.
void rows_generic(const QuantMatrix& W, const float* x, float* y, int64_t r0, int64_t r1) {
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

#if defined(__AVX512F__)

// Column (within its 64-column chunk) that lane L of step k covers; see the file comment.
int lane_column(int bits, int k, int L) {
  if (bits == 4) return (L % 8) * 8 + 2 * k + L / 8;
  if (bits == 2) return (L % 4) * 16 + 4 * k + L / 4;
  return 16 * k + L;  // 8-bit: column order
}

// The codes of one 64-column chunk of one row, prepared for the 4 steps.
template <int Bits>
struct Chunk {
  __m512i v;       // 4/2-bit: the lanes described above
  __m128i b8[4];   // 8-bit: 16 bytes per step
  __m512 lut;      // 4/2-bit: t for every index; 8-bit: unused
  __m512 s, b;     // 8-bit: broadcast scale and bias
};

inline __m512 bcast_bf16(bf16 v) { return _mm512_set1_ps(bf16_to_f32(v)); }

template <int Bits>
inline void load_chunk(Chunk<Bits>& ch, const uint32_t* words, bf16 s16, bf16 b16) {
  const __m512 s = bcast_bf16(s16), b = bcast_bf16(b16);
  if constexpr (Bits == 4) {
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words));
    ch.v = _mm512_inserti64x4(_mm512_castsi256_si512(w), _mm256_srli_epi32(w, 4), 1);
    const __m512 q = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    ch.lut = _mm512_fmadd_ps(q, s, b);
  } else if constexpr (Bits == 2) {
    const __m128i w = _mm_loadu_si128(reinterpret_cast<const __m128i*>(words));
    const __m512i pre = _mm512_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2, 4, 4, 4, 4, 6, 6, 6, 6);
    ch.v = _mm512_srlv_epi32(_mm512_broadcast_i32x4(w), pre);
    const __m512 q = _mm512_setr_ps(0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3);
    ch.lut = _mm512_fmadd_ps(q, s, b);
  } else {
    for (int k = 0; k < 4; ++k) ch.b8[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(words + 4 * k));
    ch.s = s, ch.b = b;
  }
}

// t for step k of a chunk: the dequantised weights of the 16 columns that xt holds for step k.
template <int Bits, int K>
inline __m512 chunk_step(const Chunk<Bits>& ch) {
  if constexpr (Bits == 8) {
    const __m512 q = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(ch.b8[K]));
    return _mm512_fmadd_ps(q, ch.s, ch.b);
  } else {
    const __m512i idx = K == 0 ? ch.v : _mm512_srli_epi32(ch.v, 8 * K);
    return _mm512_permutexvar_ps(idx, ch.lut);
  }
}

// R rows [r0, r0 + R) over the whole row. acc[i][0] takes steps 0 and 2, acc[i][1] steps 1 and 3.
template <int Bits, int R>
void rows_avx512(const QuantMatrix& W, const float* xt, float* y, int64_t r0) {
  const int64_t wpr = W.words_per_row(), gpr = W.groups_per_row();
  const int64_t chunks = W.cols / 64, words_per_chunk = 64 * Bits / 32, chunks_per_group = W.group_size / 64;
  __m512 acc[R][2];
  for (int i = 0; i < R; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t g = c / chunks_per_group;
    Chunk<Bits> ch[R];
    for (int i = 0; i < R; ++i) {
      const int64_t r = r0 + i;
      load_chunk<Bits>(ch[i], W.w + r * wpr + c * words_per_chunk, W.scales[r * gpr + g], W.biases[r * gpr + g]);
    }
    const float* xc = xt + c * 64;
    const __m512 x0 = _mm512_loadu_ps(xc), x1 = _mm512_loadu_ps(xc + 16);
    const __m512 x2 = _mm512_loadu_ps(xc + 32), x3 = _mm512_loadu_ps(xc + 48);
    for (int i = 0; i < R; ++i) {
      acc[i][0] = _mm512_fmadd_ps(chunk_step<Bits, 0>(ch[i]), x0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(chunk_step<Bits, 1>(ch[i]), x1, acc[i][1]);
      acc[i][0] = _mm512_fmadd_ps(chunk_step<Bits, 2>(ch[i]), x2, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(chunk_step<Bits, 3>(ch[i]), x3, acc[i][1]);
    }
  }
  for (int i = 0; i < R; ++i) y[r0 + i] = _mm512_reduce_add_ps(_mm512_add_ps(acc[i][0], acc[i][1]));
}

template <int Bits>
void matvec_avx512(const QuantMatrix& W, const float* x, float* y) {
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

#endif  // __AVX512F__

}  // namespace

void matvec_q_fast(const MatvecQParams& p, const QuantMatrix& W, std::span<const float> x, std::span<float> y) {
  matvec_q_validate(p, W, x, y);
#if defined(__AVX512F__)
  if (W.group_size % 64 == 0) {
    if (W.bits == 4) return matvec_avx512<4>(W, x.data(), y.data());
    if (W.bits == 2) return matvec_avx512<2>(W, x.data(), y.data());
    return matvec_avx512<8>(W, x.data(), y.data());
  }
#endif
  const int64_t rows_per_block = 16;
  const int64_t blocks = (W.rows + rows_per_block - 1) / rows_per_block;
#pragma omp parallel for schedule(static) if (W.rows * W.cols >= (1 << 16))
  for (int64_t blk = 0; blk < blocks; ++blk)
    rows_generic(W, x.data(), y.data(), blk * rows_per_block, std::min(W.rows, (blk + 1) * rows_per_block));
}

}  // namespace moe
