#include "ops/dequant.h"
#include "ops/embedding.h"

namespace moe {

// Tokens spread over threads for prefill; each row goes through the vectorised dequant.
void embedding_fast(const EmbeddingParams& p, const QuantMatrix& table, std::span<const int32_t> ids,
                    std::span<float> y) {
  embedding_validate(p, table, ids, y);
  const DequantParams row{1, p.dim, p.bits, p.group_size};
#pragma omp parallel for schedule(static) if (p.tokens * p.dim >= (1 << 18))
  for (int64_t t = 0; t < p.tokens; ++t) dequant_fast(row, table.row_block(ids[t], 1), y.subspan(t * p.dim, p.dim));
}

}  // namespace moe
