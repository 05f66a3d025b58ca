// The fused 4-bit row loops of matvec_ggml_fast (ops/matvec_ggml_fast_x86.h).
//
// Codes to floats with one AND or shift: a 32-bit lane holds 8 nibbles (4 bytes of a block's codes).
// Nibble k sits at bit 4p (p = k for k < 5; nibbles 5 and 6 are read from the lane shifted right by
// 12, at p = 2, 3; nibble 7 from the lane shifted right by 28, at p = 0, where the shift alone
// isolates it), inside an f32's 23-bit fraction; isolated, the lane is the subnormal float
// q 2^(4p-149). x is prescaled by 2^(86-4p) once per call, so the FMA's product is q x 2^-63 as a
// real number. With every nonzero |x| in [2^-62, 2^41) (else prepare declines and the caller
// takes the decode-then-dot path) this is the same arithmetic as q x unscaled, bit for bit:
// 2^(86-4p) x cannot overflow, each product q x 2^-63 is normal (>= 2^-125), and every product
// and partial sum is a multiple of 2^-148, so a sum that falls below 2^-126 is exact in both
// scalings. The block (sub-block) scale is taken times 2^63, which returns to the unscaled value.
// A lane's nibbles belong to one block (q4_0) or two sub-blocks (q4_K: low nibbles one, high the
// next), so the lane order of x is fixed per format.
//
// What is summed before scaling (spec/matvec_ggml_spec.h's bound for a factored kernel,
// matvec_ggml_fast_model: magnitude (|a| + |b|) |x| with W = a + b, ggml_dequant_parts):
//   q4_0  y = sum_blocks d (sum q x) - 8 sum_blocks d (sum x)
//   q4_K  y = sum_sub (d sc) (sum q x) - sum_sub (dmin m) (sum x)
// d sc and dmin m are exact (<= 17 bits). The sums of x (q4_0: per lane, the 8 columns it reads;
// q4_K: per 32 columns) are formed once per call and shared by every row. A scale's NaN or Inf
// reaches y through its block's term; a NaN or Inf x goes to the decode-then-dot path (with q = 0
// the scaled product would be 0 x Inf = NaN where the reference's -8 d x is infinite).
#include "ops/matvec_ggml_fast_x86.h"

#if defined(__x86_64__)
// GCC 12's AVX-512 headers build some intrinsics on _mm512_undefined_*(), which -Wuninitialized
// reports at every inlined use (GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/ggml_blocks.h"

#define MOE_T512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c")))
#define MOE_T256 __attribute__((target("avx2,fma,f16c")))
#define MOE_INLINE512 inline __attribute__((always_inline)) MOE_T512
#define MOE_INLINE256 inline __attribute__((always_inline)) MOE_T256

namespace moe::ggml_fused {
namespace {

constexpr uint32_t kQ4_0 = 2, kQ4_K = 12;

// Nibble k's bit position (in units of 4) in the lane it is read from.
constexpr int pos(int k) { return k < 5 ? k : k == 7 ? 0 : k - 3; }

// q4_0: the column (within a group of lanes / 4 blocks) of lane L's nibble k.
int64_t q4_0_col(int k, int L) { return 32 * (L / 4) + 4 * (L % 4) + k / 2 + 16 * (k % 2); }
// q4_K: vector h of a 256-column super-block; lane L reads bytes of pair p (32 bytes: the low
// nibbles sub-block 2p, the high ones 2p + 1).
int64_t q4_k_col(int lanes, int h, int k, int L) {
  const int p = h * (lanes / 8) + L / 8;
  return 32 * (2 * p + k % 2) + 4 * (L % 8) + k / 2;
}

// y += the reference's terms (each weight rounded once, fma in column order) over columns
// [c0, cols): the q4_0 blocks past the last whole lane group.
void tail_terms(uint32_t type, const uint8_t* row, int64_t c0, int64_t cols, const float* X, int64_t t0, int64_t nt,
                float* y) {
  if (c0 == cols) return;
  const GgmlBlockFormat* f = ggml_block_format(type);
  float w[96];
  for (int64_t c = c0; c < cols; c += 96) {
    const int64_t n = std::min<int64_t>(96, cols - c);
    ggml_dequant_f32(type, {row + c / f->block * f->block_bytes, size_t(n / f->block * f->block_bytes)}, n, w);
    for (int64_t t = 0; t < nt; ++t) {
      float acc = 0;
      for (int64_t j = 0; j < n; ++j) acc = std::fma(w[j], X[(t0 + t) * cols + c + j], acc);
      y[t] += acc;
    }
  }
}

// The next row's bytes at this block's offset, a row ahead of the loop (prefetches never fault,
// so the row past the last one is harmless): on one thread the loop otherwise waits on memory.
inline void prefetch(const uint8_t* p, int bytes) {
  for (int off = 0; off < bytes; off += 64) __builtin_prefetch(p + off, 0, 3);
}

}  // namespace

bool takes(uint32_t type) { return type == kQ4_0 || type == kQ4_K; }

PreparedX prepare(uint32_t type, int lanes, const float* X, int64_t cols, int64_t tokens) {
  PreparedX px;
  px.cols = cols, px.tokens = tokens;
  for (int64_t i = 0; i < cols * tokens; ++i) {
    const float a = std::fabs(X[i]);
    if (!(a == 0 || (a >= 0x1.0p-62f && a < 0x1.0p41f))) return px;  // NaN and Inf too
  }
  px.usable = true;
  const int64_t span = type == kQ4_0 ? 8 * lanes : 256;
  px.fused_cols = cols / span * span;
  px.buf.resize(size_t(tokens * px.fused_cols + tokens * px.fused_cols / 8) + 16);
  px.offset = (64 - reinterpret_cast<uintptr_t>(px.buf.data()) % 64) % 64 / sizeof(float);
  float* out = px.buf.data() + px.offset;
  float* lane_sum = out + tokens * px.fused_cols;
  for (int64_t t = 0; t < tokens; ++t) {
    const float* x = X + t * cols;
    for (int64_t g = 0; g < px.fused_cols; g += span) {
      const int vectors = type == kQ4_0 ? 1 : 32 / lanes;
      for (int h = 0; h < vectors; ++h)
        for (int k = 0; k < 8; ++k) {
          const float scale = std::ldexp(1.0f, 86 - 4 * pos(k));  // exact: |x| < 2^41
          for (int L = 0; L < lanes; ++L)
            *out++ = x[g + (type == kQ4_0 ? q4_0_col(k, L) : q4_k_col(lanes, h, k, L))] * scale;
        }
      if (type == kQ4_0)
        for (int L = 0; L < lanes; ++L) {
          float acc = 0;
          for (int k = 0; k < 8; ++k) acc += x[g + q4_0_col(k, L)];
          *lane_sum++ = acc;
        }
    }
  }
  if (type == kQ4_K) {
    px.sums.resize(size_t(tokens * (cols / 32)));
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t s = 0; s < cols / 32; ++s) {
        float acc = 0;
        for (int j = 0; j < 32; ++j) acc += X[t * cols + 32 * s + j];
        px.sums[size_t(t * (cols / 32) + s)] = acc;
      }
  }
  return px;
}

// ---------------------------------------------------------------------------------------------
// AVX-512: 16 lanes. q4_0: a vector holds 4 blocks' codes (lanes 4b..4b+3 block b); q4_K: a
// super-block's 128 code bytes are two vectors (lanes 0-7 one pair of sub-blocks, 8-15 the next).

namespace {

// The 8 nibbles of every lane of v as the subnormal floats q 2^(4p - 149).
MOE_INLINE512 void nibbles512(__m512i v, __m512 f[8]) {
  const __m512i v12 = _mm512_srli_epi32(v, 12);
  for (int k = 0; k < 7; ++k)
    f[k] = _mm512_castsi512_ps(_mm512_and_si512(k < 5 ? v : v12, _mm512_set1_epi32(int(0xFu << (4 * pos(k))))));
  f[7] = _mm512_castsi512_ps(_mm512_srli_epi32(v, 28));
}

// sum_k f[k] x[16k ..] for even k and for odd k, each in two chains of two (k, k + 4) added: short
// chains let a block's products overlap the next block's (4 chains measured 1.1-1.7x faster than 2).
MOE_INLINE512 void dot8_512(const __m512 f[8], const float* x, __m512& even, __m512& odd) {
  __m512 c[4];
  for (int k = 0; k < 4; ++k) c[k] = _mm512_mul_ps(f[k], _mm512_load_ps(x + 16 * k));
  for (int k = 0; k < 4; ++k) c[k] = _mm512_fmadd_ps(f[k + 4], _mm512_load_ps(x + 16 * (k + 4)), c[k]);
  even = _mm512_add_ps(c[0], c[2]);
  odd = _mm512_add_ps(c[1], c[3]);
}

MOE_INLINE512 float f16_512(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// A group's 4 blocks (72 bytes, block b at 18 b: d, then 16 code bytes): each block's codes into
// its 128-bit lane (lanes 4b..4b+3 block b) and its d into the same lanes, by 16-bit permutes of
// the group's first 64 bytes and its last 16 (every field starts at an even byte). Two permutes and
// one conversion in place of four loads and inserts and a scalar gather of the scales (measured
// 1.1-1.2x the whole loop).
MOE_INLINE512 void q4_0_group512(const uint8_t* b, __m512i& codes, __m512& d) {
  alignas(64) static const uint16_t code_words[32] = {1,  2,  3,  4,  5,  6,  7,  8,  10, 11, 12, 13, 14, 15, 16, 17,
                                                      19, 20, 21, 22, 23, 24, 25, 26, 28, 29, 30, 31, 36, 37, 38, 39};
  alignas(64) static const uint16_t d_words[32] = {0, 0, 0, 0, 9, 9, 9, 9, 18, 18, 18, 18, 27, 27, 27, 27};
  const __m512i head = _mm512_loadu_si512(b);  // bytes 0-63: words 0-31
  const __m512i tail = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 56)));  // 32+
  codes = _mm512_permutex2var_epi16(head, _mm512_load_si512(code_words), tail);
  d = _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutexvar_epi16(_mm512_load_si512(d_words), head)));
}

template <int CH>
MOE_T512 void q4_0_chunk512(const uint8_t* row, size_t ahead, const PreparedX& px, int64_t t0, float* y) {
  __m512 acc[CH], accm[CH];
  for (int t = 0; t < CH; ++t) acc[t] = accm[t] = _mm512_setzero_ps();
  for (int64_t g = 0; g < px.fused_cols / 128; ++g) {
    const uint8_t* b = row + 72 * g;
    prefetch(b + ahead, 72);
    __m512i v;
    __m512 d;
    q4_0_group512(b, v, d);
    const __m512 d63 = _mm512_mul_ps(d, _mm512_set1_ps(0x1.0p63f));
    __m512 f[8];
    nibbles512(v, f);
    for (int t = 0; t < CH; ++t) {
      __m512 even, odd;
      dot8_512(f, px.xs() + (t0 + t) * px.fused_cols + 128 * g, even, odd);
      acc[t] = _mm512_fmadd_ps(d63, _mm512_add_ps(even, odd), acc[t]);
      accm[t] = _mm512_fmadd_ps(d, _mm512_load_ps(px.lane_sums() + (t0 + t) * px.fused_cols / 8 + 16 * g), accm[t]);
    }
  }
  for (int t = 0; t < CH; ++t) y[t] = _mm512_reduce_add_ps(_mm512_fnmadd_ps(_mm512_set1_ps(8.0f), accm[t], acc[t]));
}

// The 8 sub-block scales and mins of a q4_K super-block (6 bits each, packed in 12 bytes), as
// bytes: sc[j] = j < 4 ? s[j] & 63 : (s[j + 4] & 15) | (s[j - 4] >> 6) << 4, m[j] likewise from
// s[j + 4] and the high nibble of s[j + 4] with s[j]'s top bits.
inline void q4_k_scales(const uint8_t* s, uint64_t& sc, uint64_t& m) {
  uint32_t a, b, c;
  std::memcpy(&a, s, 4), std::memcpy(&b, s + 4, 4), std::memcpy(&c, s + 8, 4);
  const uint32_t sc_hi = (c & 0x0F0F0F0Fu) | ((a >> 2) & 0x30303030u);
  const uint32_t m_hi = ((c >> 4) & 0x0F0F0F0Fu) | ((b >> 2) & 0x30303030u);
  sc = uint64_t(a & 0x3F3F3F3Fu) | uint64_t(sc_hi) << 32;
  m = uint64_t(b & 0x3F3F3F3Fu) | uint64_t(m_hi) << 32;
}

// 8 bytes as floats times `scale` (exact: an 11-bit f16 times 6 bits, times a power of two).
MOE_INLINE256 __m256 bytes_times(uint64_t bytes, float scale) {
  const __m256i q = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(int64_t(bytes)));
  return _mm256_mul_ps(_mm256_cvtepi32_ps(q), _mm256_set1_ps(scale));
}

MOE_INLINE256 float hsum256(__m256 v) {
  __m128 m4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m4 = _mm_add_ps(m4, _mm_movehl_ps(m4, m4));
  m4 = _mm_add_ss(m4, _mm_movehdup_ps(m4));
  return _mm_cvtss_f32(m4);
}

template <int CH>
MOE_T512 void q4_k_chunk512(const uint8_t* row, size_t ahead, const PreparedX& px, int64_t t0, float* y) {
  // Sub-block of lanes 0-7 / 8-15 for vector h and nibble parity: 4h + par and 4h + 2 + par.
  __m512i sub[2][2];
  for (int h = 0; h < 2; ++h)
    for (int par = 0; par < 2; ++par)
      sub[h][par] = _mm512_inserti64x4(_mm512_set1_epi32(4 * h + par), _mm256_set1_epi32(4 * h + 2 + par), 1);
  const int64_t subs = px.cols / 32;
  __m512 acc[CH][2];  // one chain per vector h
  __m256 accm[CH];
  for (int t = 0; t < CH; ++t) acc[t][0] = acc[t][1] = _mm512_setzero_ps(), accm[t] = _mm256_setzero_ps();
  for (int64_t sb = 0; sb < px.cols / 256; ++sb) {
    const uint8_t* b = row + 144 * sb;
    prefetch(b + ahead, 144);
    uint64_t scb, mb;
    q4_k_scales(b + 4, scb, mb);
    const __m512 dsc = _mm512_castps256_ps512(bytes_times(scb, f16_512(b) * 0x1.0p63f));
    const __m256 dm = bytes_times(mb, f16_512(b + 2));
    for (int t = 0; t < CH; ++t)
      accm[t] = _mm256_fmadd_ps(dm, _mm256_loadu_ps(px.sums.data() + (t0 + t) * subs + 8 * sb), accm[t]);
    for (int h = 0; h < 2; ++h) {
      __m512 f[8];
      nibbles512(_mm512_loadu_si512(b + 16 + 64 * h), f);
      const __m512 d0 = _mm512_permutexvar_ps(sub[h][0], dsc), d1 = _mm512_permutexvar_ps(sub[h][1], dsc);
      for (int t = 0; t < CH; ++t) {
        __m512 even, odd;
        dot8_512(f, px.xs() + (t0 + t) * px.fused_cols + 256 * sb + 128 * h, even, odd);
        acc[t][h] = _mm512_fmadd_ps(d1, odd, _mm512_fmadd_ps(d0, even, acc[t][h]));
      }
    }
  }
  for (int t = 0; t < CH; ++t) y[t] = _mm512_reduce_add_ps(_mm512_add_ps(acc[t][0], acc[t][1])) - hsum256(accm[t]);
}

// ---------------------------------------------------------------------------------------------
// AVX2: 8 lanes. q4_0: a vector holds 2 blocks' codes (lanes 4b..4b+3 block b); q4_K: one pair
// of sub-blocks per vector (the low nibbles sub-block 2h, the high ones 2h + 1).

MOE_INLINE256 void nibbles256(__m256i v, __m256 f[8]) {
  const __m256i v12 = _mm256_srli_epi32(v, 12);
  for (int k = 0; k < 7; ++k)
    f[k] = _mm256_castsi256_ps(_mm256_and_si256(k < 5 ? v : v12, _mm256_set1_epi32(int(0xFu << (4 * pos(k))))));
  f[7] = _mm256_castsi256_ps(_mm256_srli_epi32(v, 28));
}

MOE_INLINE256 void dot8_256(const __m256 f[8], const float* x, __m256& even, __m256& odd) {
  __m256 c[4];
  for (int k = 0; k < 4; ++k) c[k] = _mm256_mul_ps(f[k], _mm256_load_ps(x + 8 * k));
  for (int k = 0; k < 4; ++k) c[k] = _mm256_fmadd_ps(f[k + 4], _mm256_load_ps(x + 8 * (k + 4)), c[k]);
  even = _mm256_add_ps(c[0], c[2]);
  odd = _mm256_add_ps(c[1], c[3]);
}

MOE_INLINE256 float f16_256(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

template <int CH>
MOE_T256 void q4_0_chunk256(const uint8_t* row, size_t ahead, const PreparedX& px, int64_t t0, float* y) {
  __m256 acc[CH], accm[CH];
  for (int t = 0; t < CH; ++t) acc[t] = accm[t] = _mm256_setzero_ps();
  for (int64_t g = 0; g < px.fused_cols / 64; ++g) {
    const uint8_t* b = row + 36 * g;
    prefetch(b + ahead, 36);
    const __m256i v = _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(b + 20),
                                          reinterpret_cast<const __m128i*>(b + 2));
    const __m256 d = _mm256_set_m128(_mm_set1_ps(f16_256(b + 18)), _mm_set1_ps(f16_256(b)));
    const __m256 d63 = _mm256_mul_ps(d, _mm256_set1_ps(0x1.0p63f));
    __m256 f[8];
    nibbles256(v, f);
    for (int t = 0; t < CH; ++t) {
      __m256 even, odd;
      dot8_256(f, px.xs() + (t0 + t) * px.fused_cols + 64 * g, even, odd);
      acc[t] = _mm256_fmadd_ps(d63, _mm256_add_ps(even, odd), acc[t]);
      accm[t] = _mm256_fmadd_ps(d, _mm256_load_ps(px.lane_sums() + (t0 + t) * px.fused_cols / 8 + 8 * g), accm[t]);
    }
  }
  for (int t = 0; t < CH; ++t) y[t] = hsum256(_mm256_fnmadd_ps(_mm256_set1_ps(8.0f), accm[t], acc[t]));
}

template <int CH>
MOE_T256 void q4_k_chunk256(const uint8_t* row, size_t ahead, const PreparedX& px, int64_t t0, float* y) {
  const int64_t subs = px.cols / 32;
  __m256 acc[CH][2], accm[CH];  // two chains: sub-block pairs 0-1 and 2-3
  for (int t = 0; t < CH; ++t) acc[t][0] = acc[t][1] = accm[t] = _mm256_setzero_ps();
  alignas(32) float dsc[8];
  for (int64_t sb = 0; sb < px.cols / 256; ++sb) {
    const uint8_t* b = row + 144 * sb;
    prefetch(b + ahead, 144);
    uint64_t scb, mb;
    q4_k_scales(b + 4, scb, mb);
    _mm256_store_ps(dsc, bytes_times(scb, f16_256(b) * 0x1.0p63f));
    const __m256 dm = bytes_times(mb, f16_256(b + 2));
    for (int t = 0; t < CH; ++t)
      accm[t] = _mm256_fmadd_ps(dm, _mm256_loadu_ps(px.sums.data() + (t0 + t) * subs + 8 * sb), accm[t]);
    for (int h = 0; h < 4; ++h) {
      __m256 f[8];
      nibbles256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 16 + 32 * h)), f);
      const __m256 d0 = _mm256_broadcast_ss(dsc + 2 * h), d1 = _mm256_broadcast_ss(dsc + 2 * h + 1);
      for (int t = 0; t < CH; ++t) {
        __m256 even, odd;
        dot8_256(f, px.xs() + (t0 + t) * px.fused_cols + 256 * sb + 64 * h, even, odd);
        acc[t][h / 2] = _mm256_fmadd_ps(d1, odd, _mm256_fmadd_ps(d0, even, acc[t][h / 2]));
      }
    }
  }
  for (int t = 0; t < CH; ++t) y[t] = hsum256(_mm256_add_ps(acc[t][0], acc[t][1])) - hsum256(accm[t]);
}

// Tokens in chunks of 4, 2 and 1 (compile-time widths keep the accumulators in registers), then
// the q4_0 tail's reference terms; y[t] lands in Y[t * rows].
template <class Chunk4, class Chunk2, class Chunk1>
void row_tokens(uint32_t type, const uint8_t* row, size_t ahead, const PreparedX& px, const float* X, float* Y,
                int64_t rows, Chunk4 c4, Chunk2 c2, Chunk1 c1) {
  float y[4];
  for (int64_t t0 = 0; t0 < px.tokens;) {
    const int64_t left = px.tokens - t0, nt = left >= 4 ? 4 : left >= 2 ? 2 : 1;
    if (nt == 4) c4(row, ahead, px, t0, y);
    else if (nt == 2) c2(row, ahead, px, t0, y);
    else c1(row, ahead, px, t0, y);
    tail_terms(type, row, px.fused_cols, px.cols, X, t0, nt, y);
    for (int64_t t = 0; t < nt; ++t) Y[(t0 + t) * rows] = y[t];
    t0 += nt;
  }
}

}  // namespace

void rows_avx512(uint32_t type, const uint8_t* W, size_t row_bytes, const PreparedX& px, const float* X,
                 int64_t rows, int64_t r0, int64_t r1, float* Y) {
  for (int64_t r = r0; r < r1; ++r) {
    if (type == kQ4_0)
      row_tokens(type, W + size_t(r) * row_bytes, row_bytes, px, X, Y + r, rows, q4_0_chunk512<4>, q4_0_chunk512<2>,
                 q4_0_chunk512<1>);
    else
      row_tokens(type, W + size_t(r) * row_bytes, row_bytes, px, X, Y + r, rows, q4_k_chunk512<4>, q4_k_chunk512<2>,
                 q4_k_chunk512<1>);
  }
}

void rows_avx2(uint32_t type, const uint8_t* W, size_t row_bytes, const PreparedX& px, const float* X, int64_t rows,
               int64_t r0, int64_t r1, float* Y) {
  for (int64_t r = r0; r < r1; ++r) {
    if (type == kQ4_0)
      row_tokens(type, W + size_t(r) * row_bytes, row_bytes, px, X, Y + r, rows, q4_0_chunk256<4>, q4_0_chunk256<2>,
                 q4_0_chunk256<1>);
    else
      row_tokens(type, W + size_t(r) * row_bytes, row_bytes, px, X, Y + r, rows, q4_k_chunk256<4>, q4_k_chunk256<2>,
                 q4_k_chunk256<1>);
  }
}

}  // namespace moe::ggml_fused

#endif  // __x86_64__
