#include "spec/dequant_ggml_spec.h"

#include <string>

#include "core/ggml_blocks.h"
#include "spec/matvec_ggml_spec.h"

namespace moe {

std::vector<uint8_t> dequant_ggml_inputs(const DequantGgmlParams& p, uint64_t seed) {
  return matvec_ggml_inputs(MatvecGgmlParams{p.type, p.rows, p.cols, 0}, seed, false).W;
}

namespace {

std::string type_name(uint32_t type) { return ggml_block_format(type)->name; }

void remainders(std::vector<DequantGgmlShape>& out) {
  uint64_t k = 0;
  for (uint32_t type : matvec_ggml_types()) {
    const int64_t B = std::max<int64_t>(ggml_block_format(type)->block, 32);  // floats: rows of 32s
    auto add = [&](int64_t rows, int64_t cols) {
      out.push_back({type_name(type) + " remainder rows " + std::to_string(rows) + " cols " + std::to_string(cols),
                     DequantGgmlParams{type, rows, cols}, 30000 + 100 * uint64_t(type) + ++k});
    };
    add(1, B);
    add(3, 3 * B);
    add(33, (B == 256 ? 9 : 37) * B);
    add(2, 4096 + B);
    add(65537, B);  // past one dispatch dimension: GPU kernels that clamp it loop over rows
    if (B != ggml_block_format(type)->block) add(3, 37);  // a float row no block divides
  }
}

// A lookup's rows of the token embedding tables (8 rows: a prefill chunk) and whole expert
// matrices, as llama.cpp's Q4_K_M (token_embd q4_K, expert down q6_K), Q8_0 and F16 files store them.
void real_shapes(std::vector<DequantGgmlShape>& out) {
  const struct {
    const char* what;
    int64_t rows, cols;
    uint32_t type;
  } list[] = {
      {"A3B token_embd rows (Q4_K_M)", 8, 2048, 12}, {"A3B token_embd rows (Q8_0)", 8, 2048, 8},
      {"A3B token_embd rows (F16)", 8, 2048, 1},     {"A17B token_embd rows (Q4_K_M)", 8, 4096, 12},
      {"A3B expert gate", 512, 2048, 12},            {"A3B expert down", 2048, 512, 14},
      {"A17B expert down", 4096, 1024, 14},          {"DeepSeek-V3 token_embd rows", 8, 7168, 12},
  };
  uint64_t k = 40000;
  for (const auto& s : list)
    out.push_back({std::string(s.what) + " " + std::to_string(s.rows) + "x" + std::to_string(s.cols) + " " +
                       type_name(s.type),
                   DequantGgmlParams{s.type, s.rows, s.cols}, ++k});
}

}  // namespace

std::vector<DequantGgmlShape> dequant_ggml_shapes(bool rem, bool real) {
  std::vector<DequantGgmlShape> out;
  if (rem) remainders(out);
  if (real) real_shapes(out);
  return out;
}

}  // namespace moe
