#include "spec/embedding_spec.h"

#include <climits>
#include <string>

#include "core/rng.h"
#include "core/test_data.h"

namespace moe {

EmbeddingInputs embedding_inputs(const EmbeddingParams& p, uint64_t seed, bool invalid_ids) {
  Rng rng(seed);
  EmbeddingInputs in{random_quant(rng.fork(1), p.vocab, p.dim, p.bits, p.group_size), {}};
  const int32_t v = int32_t(p.vocab);
  if (invalid_ids) {
    in.ids = {-1, 0, v, v - 1, INT32_MIN, 3, v + 1};
    return in;
  }
  Rng id_rng = rng.fork(2);
  in.ids.resize(size_t(p.tokens));
  for (auto& id : in.ids) id = int32_t(id_rng.below(p.vocab));
  if (p.tokens > 0) in.ids.front() = 0;
  if (p.tokens > 1) in.ids.back() = v - 1;
  if (p.tokens > 3) in.ids[1] = in.ids[2];
  return in;
}

std::vector<EmbeddingShape> embedding_shapes(bool remainders, bool real) {
  std::vector<EmbeddingShape> out;
  auto add = [&](std::string label, int64_t tokens, int64_t vocab, int64_t dim, int bits, uint64_t offset,
                 bool invalid_ids = false) {
    out.push_back({std::move(label), EmbeddingParams{tokens, vocab, dim, bits, 64}, offset,
                   EmbeddingVariant{.invalid_ids = invalid_ids, .cpu = !invalid_ids}});
  };
  if (remainders) {
    uint64_t k = 0;
    const auto b = [](int bits) { return "remainder " + std::to_string(bits) + "-bit "; };
    auto tokens_dims = [&](std::initializer_list<int64_t> tokens) {
      for (int bits : {2, 4, 8})
        for (int64_t t : tokens)
          for (int64_t dim : {64, 4096 + 64})
            add(b(bits) + std::to_string(t) + " tokens dim " + std::to_string(dim), t, 999, dim, bits, ++k);
    };
    tokens_dims({1, 33});
    for (int64_t dim : {8192 + 64, 16384 + 64})
      for (int bits : {4, 8}) add(b(bits) + "T 1 dim " + std::to_string(dim), 1, 67, dim, bits, ++k);
    for (int bits : {2, 4, 8}) add(b(bits) + "invalid ids", 7, 999, 128, bits, ++k, true);
    tokens_dims({31, 67});
  }
  if (real) {
    add("A17B dim, decode", 1, 1024, 4096, 4, 0);
    add("A3B dim, decode", 1, 1024, 2048, 4, 1);
    add("A3B dim, prefill 64", 64, 1024, 2048, 4, 2);
    add("real vocab 248320, dim 64", 16, 248320, 64, 4, 3);
    add("A17B dim, prefill 64", 64, 1024, 4096, 4, 4);
  }
  return out;
}

}  // namespace moe
