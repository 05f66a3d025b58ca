// matvec_ggml_fast: Y = X W^T for W in a ggml block format (shape contract in ops/matvec_ggml.h).
//
// q4_0 and q4_K on an AVX2 or AVX-512 target take the fused loops of ops/matvec_ggml_fast_x86.cpp
// (x rearranged once per call; their factored sums and bound are described there). Otherwise,
// below: every term is the reference f32 tier's: the weight rounded once to f32 (core/ggml_blocks.h
// ggml_dequant_f32) times x; only the order of the sum differs (16 partial sums, added pairwise),
// so the error is that of a dot product of `cols` terms in another order, and NaN/Inf reach Y as
// in the reference. Threads split the rows; each thread decodes a row into a buffer and dots it
// with every token, so W is read once per call whatever the token count.
//
// The formats of real checkpoints (q4_0, q8_0, q4_K, q6_K) are decoded here in f32 arithmetic
// with one rounding per value at most, so each equals the exact value rounded once (the f16 scale
// times a code of <= 6 bits and a sub-block scale of <= 8 bits has <= 25 significant bits: only
// the last product may round); the other formats take ggml_dequant_f32. x86-64 builds compile the
// row loop for AVX-512, AVX2 + FMA and the baseline and run the one matching the fast tier's SIMD
// target (core/simd.h: the CPU's best, or the one pinned with MOE_SIMD / simd_pin), so a portable
// binary still runs the wide vectors and every variant can be tested on one machine; they compute
// the same values.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/ggml_blocks.h"
#include "core/simd.h"
#include "ops/matvec_ggml.h"
#include "ops/matvec_ggml_fast_x86.h"

// The helpers are inlined into each variant of the row loop, so they are compiled for its target too.
#define MOE_INLINE inline __attribute__((always_inline))

namespace moe {
namespace {

constexpr int kParts = 16;

// f16 -> f32 exactly without a libm call: the 15 low bits shifted into an f32's exponent and
// fraction read as a number 2^-112 times the f16's (subnormals included), so one multiplication by
// 2^112 (exact: a power of two, no overflow) gives the value; Inf and NaN keep an all-ones exponent.
MOE_INLINE float f16f(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  const uint32_t em = uint32_t(h & 0x7FFF) << 13, sign = uint32_t(h & 0x8000) << 16;
  float v;
  if (em >= (0x7C00u << 13)) {
    const uint32_t bits = em | 0x7F800000u | sign;
    std::memcpy(&v, &bits, 4);
    return v;
  }
  std::memcpy(&v, &em, 4);
  v *= 0x1.0p112f;
  return sign ? -v : v;
}

// 16 lanes of bytes and of floats (GCC / Clang vector extensions): each clone lowers them to its
// widest vectors (one zmm under AVX-512, two ymm under AVX2, four xmm in the baseline). Byte
// lanes convert to float exactly.
typedef uint8_t u8x16 __attribute__((vector_size(16)));
typedef int8_t i8x16 __attribute__((vector_size(16)));
typedef int32_t i32x16 __attribute__((vector_size(64)));
typedef float f32x16 __attribute__((vector_size(64)));

MOE_INLINE u8x16 load16(const uint8_t* p) {
  u8x16 v;
  std::memcpy(&v, p, 16);
  return v;
}
MOE_INLINE void store16(float* p, f32x16 v) { std::memcpy(p, &v, 64); }
// Through int32 (a zero extension, then int -> float): GCC 12 lowers a direct u8 -> float
// conversion element by element.
MOE_INLINE f32x16 to_f32(u8x16 v) { return __builtin_convertvector(__builtin_convertvector(v, i32x16), f32x16); }

// w = d (q - 8): |q - 8| <= 8 times an 11-bit d: exact.
MOE_INLINE void q4_0_row(const uint8_t* __restrict b, int64_t blocks, float* __restrict w) {
  for (int64_t k = 0; k < blocks; ++k, b += 18, w += 32) {
    const float d = f16f(b);
    const u8x16 q = load16(b + 2);
    store16(w, (to_f32(q & 0xF) - 8.0f) * d);
    store16(w + 16, (to_f32(q >> 4) - 8.0f) * d);
  }
}

// w = d q, q int8: exact.
MOE_INLINE void q8_0_row(const uint8_t* __restrict b, int64_t blocks, float* __restrict w) {
  for (int64_t k = 0; k < blocks; ++k, b += 34, w += 32) {
    const float d = f16f(b);
    for (int h = 0; h < 2; ++h) {
      i8x16 q;
      std::memcpy(&q, b + 2 + 16 * h, 16);
      store16(w + 16 * h, __builtin_convertvector(__builtin_convertvector(q, i32x16), f32x16) * d);
    }
  }
}

// w = (d sc) q - (dmin m): d sc, (d sc) q and dmin m exact (<= 22 bits); the difference rounds once.
MOE_INLINE void q4_k_row(const uint8_t* __restrict b, int64_t blocks, float* __restrict w) {
  for (int64_t k = 0; k < blocks; ++k, b += 144) {
    const float d = f16f(b), dmin = f16f(b + 2);
    const uint8_t* s = b + 4;
    const uint8_t* q = b + 16;
    for (int pair = 0; pair < 4; ++pair, q += 32, w += 64) {
      float dsc[2], dm[2];
      for (int h = 0; h < 2; ++h) {
        const int j = 2 * pair + h;
        const int sc = j < 4 ? s[j] & 63 : (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
        const int m = j < 4 ? s[j + 4] & 63 : (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
        dsc[h] = d * float(sc), dm[h] = dmin * float(m);
      }
      for (int half = 0; half < 2; ++half) {
        const u8x16 v = load16(q + 16 * half);
        store16(w + 16 * half, to_f32(v & 0xF) * dsc[0] - dm[0]);
        store16(w + 32 + 16 * half, to_f32(v >> 4) * dsc[1] - dm[1]);
      }
    }
  }
}

// w = (d sc) (q - 32): d sc exact (19 bits); the product rounds once. Per 128 values: four runs
// of 32 (low nibbles of ql[0..31] with bits 0-1 of qh, of ql[32..63] with bits 2-3, their high
// nibbles with bits 4-5 and 6-7), each with two scales of 16.
MOE_INLINE void q6_k_row(const uint8_t* __restrict b, int64_t blocks, float* __restrict w) {
  for (int64_t k = 0; k < blocks; ++k, b += 210) {
    const float d = f16f(b + 208);
    const uint8_t* ql = b;
    const uint8_t* qh = b + 128;
    const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
    for (int half = 0; half < 2; ++half, ql += 64, qh += 32, sc += 8, w += 128)
      for (int run = 0; run < 4; ++run)
        for (int part = 0; part < 2; ++part) {
          const u8x16 lo = load16(ql + 32 * (run & 1) + 16 * part), hi = load16(qh + 16 * part);
          const u8x16 q = ((lo >> (4 * (run >> 1))) & 0xF) | (((hi >> (2 * run)) & 3) << 4);
          store16(w + 32 * run + 16 * part, (to_f32(q) - 32.0f) * (d * float(sc[2 * run + part])));
        }
  }
}

// One row: decoded into w, then dotted with each token's x into Y[t * rows].
MOE_INLINE void row(uint32_t type, const uint8_t* bytes, size_t row_bytes, int64_t cols, const float* X,
                    int64_t tokens, int64_t rows, float* Y, float* w) {
  switch (type) {
    case 2: q4_0_row(bytes, cols / 32, w); break;
    case 8: q8_0_row(bytes, cols / 32, w); break;
    case 12: q4_k_row(bytes, cols / 256, w); break;
    case 14: q6_k_row(bytes, cols / 256, w); break;
    default: ggml_dequant_f32(type, {bytes, row_bytes}, cols, w);
  }
  for (int64_t t = 0; t < tokens; ++t) {
    const float* x = X + t * cols;
    float part[kParts] = {};
    int64_t c = 0;
    for (; c + kParts <= cols; c += kParts)
      for (int k = 0; k < kParts; ++k) part[k] += w[c + k] * x[c + k];
    for (; c < cols; ++c) part[c % kParts] += w[c] * x[c];
    for (int width = kParts / 2; width >= 1; width /= 2)
      for (int k = 0; k < width; ++k) part[k] += part[k + width];
    Y[t * rows] = part[0];
  }
}

using RowFn = void (*)(uint32_t, const uint8_t*, size_t, int64_t, const float*, int64_t, int64_t, float*, float*);

void row_baseline(uint32_t type, const uint8_t* b, size_t rb, int64_t cols, const float* X, int64_t tokens,
                  int64_t rows, float* Y, float* w) {
  row(type, b, rb, cols, X, tokens, rows, Y, w);
}

#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) void row_avx2(uint32_t type, const uint8_t* b, size_t rb, int64_t cols,
                                                   const float* X, int64_t tokens, int64_t rows, float* Y, float* w) {
  row(type, b, rb, cols, X, tokens, rows, Y, w);
}
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma"))) void row_avx512(
    uint32_t type, const uint8_t* b, size_t rb, int64_t cols, const float* X, int64_t tokens, int64_t rows, float* Y,
    float* w) {
  row(type, b, rb, cols, X, tokens, rows, Y, w);
}
#endif

// The row loop for the fast tier's SIMD target: Highway's AVX3* targets are AVX-512.
RowFn row_for_target() {
#if defined(__x86_64__)
  const std::string t = simd_target();
  if (t.rfind("AVX3", 0) == 0) return row_avx512;
  if (t == "AVX2") return row_avx2;
#endif
  return row_baseline;
}

// The fused loops' lane count for this type on the fast tier's target (16 AVX-512, 8 AVX2), or 0.
int fused_lanes(uint32_t type) {
#if defined(__x86_64__)
  if (!ggml_fused::takes(type)) return 0;
  const std::string t = simd_target();
  if (t.rfind("AVX3", 0) == 0) return 16;
  if (t == "AVX2") return 8;
#endif
  (void)type;
  return 0;
}

}  // namespace

void matvec_ggml_fast(const MatvecGgmlParams& p, const BlockMatrix& W, std::span<const float> X, std::span<float> Y) {
  matvec_ggml_validate(p, W, X, Y);
  if (p.rows == 0 || p.tokens == 0) return;
  const size_t rb = W.row_bytes();
  constexpr int64_t kRowsPerTask = 16;
  const int64_t tasks = (p.rows + kRowsPerTask - 1) / kRowsPerTask;
#if defined(__x86_64__)
  const int lanes = fused_lanes(W.type);
  if (lanes != 0) {
    const ggml_fused::PreparedX px = ggml_fused::prepare(W.type, lanes, X.data(), p.cols, p.tokens);
    if (px.usable) {
      const auto rows = lanes == 16 ? ggml_fused::rows_avx512 : ggml_fused::rows_avx2;
#pragma omp parallel for schedule(dynamic, 4)
      for (int64_t task = 0; task < tasks; ++task)
        rows(W.type, W.data, rb, px, X.data(), p.rows, task * kRowsPerTask,
             std::min(p.rows, (task + 1) * kRowsPerTask), Y.data());
      return;
    }
  }
#endif
  const RowFn row_fn = row_for_target();
#pragma omp parallel
  {
    std::vector<float> w(static_cast<size_t>(p.cols));
#pragma omp for schedule(dynamic, 4)
    for (int64_t task = 0; task < tasks; ++task)
      for (int64_t r = task * kRowsPerTask; r < std::min(p.rows, (task + 1) * kRowsPerTask); ++r)
        row_fn(W.type, W.data + size_t(r) * rb, rb, p.cols, X.data(), p.tokens, p.rows, Y.data() + r, w.data());
  }
}

}  // namespace moe
