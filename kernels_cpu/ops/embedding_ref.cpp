#include "core/math.h"
#include "ops/dequant.h"
#include "ops/embedding.h"

namespace moe {

void embedding_validate(const EmbeddingParams& p, const QuantMatrix& table, std::span<const int32_t> ids,
                        std::span<float> y) {
  MOE_CHECK(p.tokens >= 0 && p.vocab > 0 && p.dim > 0, "embedding: tokens=" << p.tokens << " vocab=" << p.vocab
                                                            << " dim=" << p.dim
                                                            << ", expected tokens >= 0, vocab > 0, dim > 0");
  dequant_validate_matrix(table, p.vocab, p.dim, p.bits, p.group_size, "embedding", "table");
  check_size(ids, p.tokens, "embedding", "ids");
  check_size(y, p.tokens * p.dim, "embedding", "y");
  for (int64_t t = 0; t < p.tokens; ++t)
    MOE_CHECK(ids[t] >= 0 && ids[t] < p.vocab,
              "embedding: token id " << ids[t] << " at position " << t << " out of range [0, " << p.vocab << ")");
}

// Each row is the dequant op's f32/f64 tier on a one-row view of the table.
template <class Acc>
void embedding_ref(const EmbeddingParams& p, const QuantMatrix& table, std::span<const int32_t> ids,
                   std::span<float> y) {
  embedding_validate(p, table, ids, y);
  const DequantParams row{1, p.dim, p.bits, p.group_size};
  for (int64_t t = 0; t < p.tokens; ++t) dequant_ref<Acc>(row, table.row_block(ids[t], 1), y.subspan(t * p.dim, p.dim));
}

template void embedding_ref<float>(const EmbeddingParams&, const QuantMatrix&, std::span<const int32_t>,
                                   std::span<float>);
template void embedding_ref<double>(const EmbeddingParams&, const QuantMatrix&, std::span<const int32_t>,
                                    std::span<float>);

}  // namespace moe
