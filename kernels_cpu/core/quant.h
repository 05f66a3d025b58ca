// MLX affine quantized matrices (docs/ops/formats.md "MLX affine quantization",
// docs/ops/quantized.md "Dequantisation").
//
// A logical W[rows, cols] with `bits` in {2, 4, 8} is three arrays:
//   w       uint32 [rows, cols*bits/32]  element c of a row is bits [(c%vpw)*bits, ...) of word c/vpw,
//                                        low bits first (q = 0..7 at 4 bits packs to 0x76543210)
//   scales  bf16   [rows, cols/G]        one affine pair per G = group_size consecutive columns
//   biases  bf16   [rows, cols/G]
//   W[r][c] = q * s + b   (q unsigned; s may be negative; q*s is exact in f32 for bits <= 8)
#pragma once
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "core/bf16.h"
#include "core/check.h"

namespace moe {

struct QuantMatrix {
  const uint32_t* w = nullptr;
  const bf16* scales = nullptr;
  const bf16* biases = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  int bits = 4;
  int group_size = 64;

  int values_per_word() const { return 32 / bits; }
  int64_t words_per_row() const { return cols / values_per_word(); }
  int64_t groups_per_row() const { return cols / group_size; }
  int64_t weight_words() const { return rows * words_per_row(); }
  int64_t scale_count() const { return rows * groups_per_row(); }
  // Bytes a full pass over the matrix reads (weights + scales + biases).
  int64_t bytes() const { return weight_words() * 4 + 2 * scale_count() * 2; }
  // One row as a 1-row matrix (same packing).
  QuantMatrix row_block(int64_t r0, int64_t nrows) const {
    QuantMatrix m = *this;
    m.w = w + r0 * words_per_row();
    m.scales = scales + r0 * groups_per_row();
    m.biases = biases + r0 * groups_per_row();
    m.rows = nrows;
    return m;
  }
};

// The params of an op over one whole quantized matrix (dequant, matvec_q): its shape and format,
// which must equal the matrix's own (each op's validate says which differs).
// The constructor is there so that no brace list initialises it by elision: a derived params
// struct (MatmulQParams) must spell its base as {rows, cols, bits, group_size}.
struct QuantMatrixParams {
  int64_t rows = 0;
  int64_t cols = 0;
  int bits = 4;
  int group_size = 64;
  QuantMatrixParams() = default;
  QuantMatrixParams(int64_t rows_, int64_t cols_, int bits_, int group_size_)
      : rows(rows_), cols(cols_), bits(bits_), group_size(group_size_) {}
  template <class F>
  void visit(F&& f) const {
    f("rows", rows), f("cols", cols), f("bits", bits), f("group_size", group_size);
  }
};

// The params that describe m itself.
inline QuantMatrixParams quant_params(const QuantMatrix& m) { return {m.rows, m.cols, m.bits, m.group_size}; }

// The code of column c in a row's packed words.
inline uint32_t quant_code(const uint32_t* row_words, int64_t c, int bits) {
  const int vpw = 32 / bits;
  return (row_words[c / vpw] >> ((c % vpw) * bits)) & ((1u << bits) - 1u);
}

// Validates the layout; `op` and `what` name the caller and the tensor in the message.
inline void check_quant(const QuantMatrix& m, std::string_view op, std::string_view what) {
  MOE_CHECK(m.bits == 2 || m.bits == 4 || m.bits == 8,
            op << ": " << what << " has bits=" << m.bits << ", expected 2, 4 or 8");
  MOE_CHECK(m.group_size > 0 && m.group_size % (32 / m.bits) == 0,
            op << ": " << what << " has group_size=" << m.group_size << ", expected a positive multiple of "
               << 32 / m.bits);
  MOE_CHECK(m.rows >= 0 && m.cols > 0, op << ": " << what << " has shape [" << m.rows << ", " << m.cols << "]");
  MOE_CHECK(m.cols % m.group_size == 0, op << ": " << what << " has cols=" << m.cols
                                           << ", expected a multiple of group_size=" << m.group_size);
  MOE_CHECK(m.rows == 0 || (m.w && m.scales && m.biases), op << ": " << what << " has a null data pointer");
}

}  // namespace moe

namespace moe {

// Owned storage for a quantized matrix (fixtures, tests, checks).
struct QuantStorage {
  std::vector<uint32_t> w;
  std::vector<bf16> scales, biases;
  int64_t rows = 0, cols = 0;
  int bits = 4, group_size = 64;
  QuantMatrix view() const { return {w.data(), scales.data(), biases.data(), rows, cols, bits, group_size}; }
};

}  // namespace moe
