// embedding: token embeddings dequantised from a quantized table (docs/ops/forward.md "Embedding",
// `embed_lookup`; HF `embed_tokens`, no scaling).
//
// Shape contract:
//   table  QuantMatrix [vocab, dim], bits 2/4/8 (4 in every checkpoint), group_size G dividing dim;
//          its shape and format must equal the params (A17B: [248320, 4096], A3B: [248320, 2048])
//   ids    [tokens] int32, each in [0, vocab): anything else is an error naming the id and its
//          position (C/VK engines do not check: undefined behaviour; MFR errors too). All ids are
//          checked before any output is written.
//   y      [tokens, dim] f32, row-major: y[t] = dequant(table row ids[t]) (the same values as
//          the dequant op, q*s + b with one rounding: bit-exact across tiers)
#pragma once
#include <cstdint>
#include <span>

#include "core/quant.h"

namespace moe {

struct EmbeddingParams {
  int64_t tokens = 1;
  int64_t vocab = 0;
  int64_t dim = 0;
  int bits = 4;
  int group_size = 64;
  template <class F>
  void visit(F&& f) const {
    f("tokens", tokens), f("vocab", vocab), f("dim", dim), f("bits", bits), f("group_size", group_size);
  }
};

template <class Acc>
void embedding_ref(const EmbeddingParams& p, const QuantMatrix& table, std::span<const int32_t> ids,
                   std::span<float> y);
void embedding_fast(const EmbeddingParams& p, const QuantMatrix& table, std::span<const int32_t> ids,
                    std::span<float> y);

void embedding_validate(const EmbeddingParams& p, const QuantMatrix& table, std::span<const int32_t> ids,
                        std::span<float> y);

}  // namespace moe
