// matvec_ggml_fast: Y = X W^T for W in a ggml block format (shape contract in ops/matvec_ggml.h).
//
// Every term is the reference f32 tier's: the weight rounded once to f32 (core/ggml_blocks.h
// ggml_dequant_f32) times x; only the order of the sum differs (16 partial sums, added pairwise),
// so the error is that of a dot product of `cols` terms in another order, and NaN/Inf reach Y as
// in the reference. Threads split the rows; each thread decodes a row into a buffer and dots it
// with every token, so W is read once per call whatever the token count.
//
// The formats of real checkpoints (q4_0, q8_0, q4_K, q6_K) are decoded here in f32 arithmetic
// with one rounding per value at most, so each equals the exact value rounded once (the f16 scale
// times a code of <= 6 bits and a sub-block scale of <= 8 bits has <= 25 significant bits: only
// the last product may round); the other formats take ggml_dequant_f32. x86-64 builds clone the
// row loop for AVX-512, AVX2 + FMA and the baseline (chosen at load by the CPU), so a portable
// binary still runs the wide vectors; the clones compute the same values.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/ggml_blocks.h"
#include "core/half.h"
#include "ops/matvec_ggml.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MOE_CLONES __attribute__((target_clones("avx512f", "avx2,fma", "default")))
#else
#define MOE_CLONES
#endif

namespace moe {
namespace {

constexpr int kParts = 16;

inline float f16f(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return float(f16_to_double(h));  // exact
}

// w = d (q - 8): |q - 8| <= 8 times an 11-bit d: exact.
inline void q4_0_row(const uint8_t* b, int64_t blocks, float* w) {
  for (int64_t k = 0; k < blocks; ++k, b += 18, w += 32) {
    const float d = f16f(b);
    for (int j = 0; j < 16; ++j) {
      w[j] = d * float(int(b[2 + j] & 0xF) - 8);
      w[j + 16] = d * float(int(b[2 + j] >> 4) - 8);
    }
  }
}

// w = d q, q int8: exact.
inline void q8_0_row(const uint8_t* b, int64_t blocks, float* w) {
  for (int64_t k = 0; k < blocks; ++k, b += 34, w += 32) {
    const float d = f16f(b);
    for (int j = 0; j < 32; ++j) w[j] = d * float(int8_t(b[2 + j]));
  }
}

// w = (d sc) q - (dmin m): d sc, (d sc) q and dmin m exact (<= 22 bits); the difference rounds once.
inline void q4_k_row(const uint8_t* b, int64_t blocks, float* w) {
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
      for (int l = 0; l < 32; ++l) {
        w[l] = dsc[0] * float(q[l] & 0xF) - dm[0];
        w[l + 32] = dsc[1] * float(q[l] >> 4) - dm[1];
      }
    }
  }
}

// w = (d sc) (q - 32): d sc exact (19 bits); the product rounds once.
inline void q6_k_row(const uint8_t* b, int64_t blocks, float* w) {
  for (int64_t k = 0; k < blocks; ++k, b += 210) {
    const float d = f16f(b + 208);
    const uint8_t* ql = b;
    const uint8_t* qh = b + 128;
    const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
    for (int half = 0; half < 2; ++half, ql += 64, qh += 32, sc += 8, w += 128)
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        w[l] = d * float(sc[is]) * float((int(ql[l] & 0xF) | ((qh[l] >> 0) & 3) << 4) - 32);
        w[l + 32] = d * float(sc[is + 2]) * float((int(ql[l + 32] & 0xF) | ((qh[l] >> 2) & 3) << 4) - 32);
        w[l + 64] = d * float(sc[is + 4]) * float((int(ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32);
        w[l + 96] = d * float(sc[is + 6]) * float((int(ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32);
      }
  }
}

// One row: decoded into w, then dotted with each token's x into Y[t * rows].
MOE_CLONES void row(uint32_t type, const uint8_t* bytes, size_t row_bytes, int64_t cols, const float* X,
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

}  // namespace

void matvec_ggml_fast(const MatvecGgmlParams& p, const BlockMatrix& W, std::span<const float> X, std::span<float> Y) {
  matvec_ggml_validate(p, W, X, Y);
  if (p.rows == 0 || p.tokens == 0) return;
  const size_t rb = W.row_bytes();
  constexpr int64_t kRowsPerTask = 16;
  const int64_t tasks = (p.rows + kRowsPerTask - 1) / kRowsPerTask;
#pragma omp parallel
  {
    std::vector<float> w(static_cast<size_t>(p.cols));
#pragma omp for schedule(dynamic, 4)
    for (int64_t task = 0; task < tasks; ++task)
      for (int64_t r = task * kRowsPerTask; r < std::min(p.rows, (task + 1) * kRowsPerTask); ++r)
        row(W.type, W.data + size_t(r) * rb, rb, p.cols, X.data(), p.tokens, p.rows, Y.data() + r, w.data());
  }
}

}  // namespace moe
