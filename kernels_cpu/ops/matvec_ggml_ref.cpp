#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "core/ggml_blocks.h"
#include "core/math.h"
#include "ops/matvec_ggml.h"

namespace moe {

size_t BlockMatrix::row_bytes() const {
  const GgmlBlockFormat* f = ggml_block_format(type);
  MOE_CHECK(f, "ggml block matrix: type " << type << " is not a format moeoracle decodes");
  return size_t(cols / f->block) * f->block_bytes;
}

void check_block_matrix(const BlockMatrix& W, int64_t type, int64_t rows, int64_t cols, const char* op,
                        const char* what) {
  const GgmlBlockFormat* f = ggml_block_format(uint32_t(type));
  MOE_CHECK(type >= 0 && f, op << ": type " << type
                               << " is not a ggml format moeoracle decodes (f32 0, f16 1, q4_0 2, q4_1 3, q5_0 6, "
                               << "q5_1 7, q8_0 8, q2_K 10, q3_K 11, q4_K 12, q5_K 13, q6_K 14, iq4_nl 20, "
                               << "iq4_xs 23, f64 28, bf16 30)");
  MOE_CHECK(W.type == uint32_t(type) && W.rows == rows && W.cols == cols,
            op << ": " << what << " is type " << W.type << " [" << W.rows << ", " << W.cols << "], params say type "
               << type << " [" << rows << ", " << cols << "]");
  MOE_CHECK(rows >= 0 && cols > 0 && cols % f->block == 0,
            op << ": " << what << " has shape [" << rows << ", " << cols << "], expected rows >= 0 and cols a "
               << "positive multiple of " << f->name << "'s block of " << f->block);
  MOE_CHECK(rows == 0 || W.data, op << ": " << what << " has a null data pointer");
}

void matvec_ggml_validate(const MatvecGgmlParams& p, const BlockMatrix& W, std::span<const float> X,
                          std::span<float> Y) {
  check_block_matrix(W, p.type, p.rows, p.cols, "matvec_ggml", "W");
  MOE_CHECK(p.tokens >= 0, "matvec_ggml: tokens=" << p.tokens);
  check_size(X, p.tokens * p.cols, "matvec_ggml", "X");
  check_size(Y, p.tokens * p.rows, "matvec_ggml", "Y");
}

namespace {

// Per row: its exact weights (f64) or their f32 roundings, then one dot product per token in
// column order. std::fma is correctly rounded wherever it runs; the FMA build inlines it.
template <class Acc>
inline void rows(const MatvecGgmlParams& p, const BlockMatrix& W, const float* X, float* Y, int64_t r0, int64_t r1) {
  std::vector<Acc> w(static_cast<size_t>(p.cols));
  const size_t rb = W.row_bytes();
  for (int64_t r = r0; r < r1; ++r) {
    const std::span<const uint8_t> row(W.data + size_t(r) * rb, rb);
    if constexpr (std::is_same_v<Acc, double>) {
      ggml_dequant_f64(W.type, row, p.cols, w.data());
    } else {
      ggml_dequant_f32(W.type, row, p.cols, w.data());
    }
    for (int64_t t = 0; t < p.tokens; ++t) {
      const float* x = X + t * p.cols;
      Acc acc = 0;
      for (int64_t c = 0; c < p.cols; ++c) acc = std::fma(w[size_t(c)], Acc(x[c]), acc);
      Y[t * p.rows + r] = float(acc);
    }
  }
}

#if defined(__x86_64__)
template <class Acc>
__attribute__((target("fma"))) void rows_fma(const MatvecGgmlParams& p, const BlockMatrix& W, const float* X, float* Y,
                                             int64_t r0, int64_t r1) {
  rows<Acc>(p, W, X, Y, r0, r1);
}
#endif

}  // namespace

// Rows are independent, each summed by one thread: threads change the speed, never the bits.
template <class Acc>
void matvec_ggml_ref(const MatvecGgmlParams& p, const BlockMatrix& W, std::span<const float> X, std::span<float> Y) {
  matvec_ggml_validate(p, W, X, Y);
#if defined(__x86_64__)
  const bool fma = __builtin_cpu_supports("fma");
#endif
  ref_row_blocks(p.rows, p.rows * p.cols * std::max<int64_t>(p.tokens, 1), [&](int64_t r0, int64_t r1) {
#if defined(__x86_64__)
    if (fma) return rows_fma<Acc>(p, W, X.data(), Y.data(), r0, r1);
#endif
    rows<Acc>(p, W, X.data(), Y.data(), r0, r1);
  });
}

template void matvec_ggml_ref<float>(const MatvecGgmlParams&, const BlockMatrix&, std::span<const float>,
                                     std::span<float>);
template void matvec_ggml_ref<double>(const MatvecGgmlParams&, const BlockMatrix&, std::span<const float>,
                                      std::span<float>);

}  // namespace moe
