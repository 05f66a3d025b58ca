// embedding's spec: its shapes and its seeded inputs, read by the CPU three-way check
// (kernels_cpu/check/embedding_check.cpp), the GPU cases (compare/cases/embedding_case.cpp, also
// for mutate) and, through the GPU backend, bisect. The op itself: kernels_cpu/ops/embedding.h.
// Its bound is 0 under every precision model: each output is one dequantised weight q*s + b with
// q*s exact in f32 (< 2^8 times an 8-bit significand), so every CPU tier and GPU kernel (fused or
// not; Vulkan: +, * and fma are correctly rounded) rounds the same exact sum once, and the truth's
// f64 sum of two f32 values rounds to the same f32 (53 >= 2*24 + 2).
#pragma once
#include <cstdint>
#include <vector>

#include "core/quant.h"
#include "ops/embedding.h"
#include "spec/shape.h"

namespace moe {

// The table: an MLX-quantized Gaussian (core/test_data.h). Ids: random, with 0 first and vocab - 1
// last (both ends of the table's addressing) and a repeated id when there is room; invalid_ids:
// -1, INT32_MIN (id < 0), vocab, vocab + 1 (id >= vocab) at the first and last token with valid
// ids between (p.tokens must be 7).
struct EmbeddingInputs {
  QuantStorage table;
  std::vector<int32_t> ids;
};
EmbeddingInputs embedding_inputs(const EmbeddingParams& p, uint64_t seed, bool invalid_ids);

// The variant: invalid ids, judged by the GPU alone (the CPU tiers reject them, an error
// tests/kernels/embedding_test.cpp checks; the kernels write those rows NaN).
struct EmbeddingVariant {
  bool invalid_ids = false;
  bool cpu = true;
};
using EmbeddingShape = SpecShape<EmbeddingParams, EmbeddingVariant>;
// Remainders: 2-, 4- and 8-bit tables, tokens around subgroup widths, rows of one group and of
// 65 groups; rows past the 8192- and 16384-wide buffers engines size for (one token, a small
// table); invalid ids. Real: the real dims with a 1024-row table (the real tables are 248320 rows,
// 0.5-1 GB), and the real vocab with one group per row, so ids 0 and 248319 go through the real
// addressing.
std::vector<EmbeddingShape> embedding_shapes(bool remainders, bool real);

}  // namespace moe
