#include <bit>
#include <climits>
#include <cstdint>
#include <limits>
#include <string>

#include "compare/cases/case_util.h"
#include "compare/cases/instances.h"
#include "core/rng.h"
#include "core/test_data.h"
#include "ops/embedding.h"

namespace moe::compare {
namespace {

HostTensor i32_tensor(const std::vector<int32_t>& v) {
  HostTensor t;
  t.type = ElemType::I32, t.elems = int64_t(v.size());
  for (int32_t x : v) t.words.push_back(std::bit_cast<uint32_t>(x));
  return t;
}

// ---- embedding: y[t] = dequant(table row ids[t]). Each output is one dequantised weight q*s + b
// with q*s exact in f32, so the GPU's one rounding (fused or not; Vulkan: +, * and fma are
// correctly rounded) equals the truth's f64 sum rounded to f32 (53 >= 2*24 + 2): Kind::Exact.
// Ids as the op's self-check: random, with 0 first and vocab - 1 last (both ends of the table's
// addressing) and a repeated id when there is room.
}  // namespace

OpCase embedding_instance(const std::string& label, uint64_t seed, const EmbeddingParams& p, const QuantMatrix& table,
                          std::span<const int32_t> ids) {
  OpCase c = new_case("embedding", label, seed);
  set_vars(c, p);
  std::vector<float> y(static_cast<size_t>(p.tokens * p.dim));
  embedding_ref<double>(p, table, ids, y);
  add_quant_tensors(c, "table", table);
  c.tensors["ids"] = i32_tensor(std::vector<int32_t>(ids.begin(), ids.end()));
  c.tensors["y"] = output_f32(p.tokens * p.dim);
  set_exact_output(c, "y", y);
  return c;
}

namespace {

OpCase embedding_case(const std::string& label, int64_t tokens, int64_t vocab, int64_t dim, int bits, uint64_t seed) {
  EmbeddingParams p;
  p.tokens = tokens, p.vocab = vocab, p.dim = dim, p.bits = bits, p.group_size = 64;
  Rng rng(seed);
  const QuantStorage table = random_quant(rng.fork(1), vocab, dim, bits, p.group_size);
  Rng id_rng = rng.fork(2);
  std::vector<int32_t> ids(static_cast<size_t>(tokens));
  for (auto& id : ids) id = int32_t(id_rng.below(vocab));
  if (tokens > 0) ids.front() = 0;
  if (tokens > 1) ids.back() = int32_t(vocab - 1);
  if (tokens > 3) ids[1] = ids[2];
  return embedding_instance(label, seed, p, table.view(), ids);
}

// Ids outside [0, vocab): the kernel's contract writes their rows NaN (any payload) and never
// addresses the table with them. The truth: the valid rows from the reference (an in-range id
// stands in for each invalid one), the invalid rows NaN. Reaches the invalid-id path: -1 and
// INT32_MIN (id < 0), vocab itself (the bound, id >= vocab), vocab + 1; one at token 0 (the first
// output element: a write before it leaves the buffer) and one at the last token (the last
// element: a write past it leaves the buffer), valid rows between them (a shifted write lands in
// a neighbour's row or leaves part of its own unwritten).
OpCase embedding_invalid_ids_case(const std::string& label, int64_t vocab, int64_t dim, int bits, uint64_t seed) {
  EmbeddingParams p;
  p.vocab = vocab, p.dim = dim, p.bits = bits, p.group_size = 64;
  const std::vector<int32_t> ids = {-1, 0, int32_t(vocab), int32_t(vocab - 1), INT32_MIN, 3, int32_t(vocab + 1)};
  p.tokens = int64_t(ids.size());
  Rng rng(seed);
  const QuantStorage table = random_quant(rng.fork(1), vocab, dim, bits, p.group_size);
  std::vector<int32_t> valid(ids);
  for (auto& id : valid)
    if (id < 0 || id >= vocab) id = 0;
  OpCase c = embedding_instance(label, seed, p, table.view(), valid);
  c.tensors["ids"] = i32_tensor(ids);
  std::vector<double>& truth = c.truth["y"];
  for (size_t t = 0; t < ids.size(); ++t)
    if (ids[t] < 0 || ids[t] >= vocab)
      for (int64_t d = 0; d < dim; ++d) truth[t * size_t(dim) + size_t(d)] = std::numeric_limits<double>::quiet_NaN();
  return c;
}

}  // namespace

std::vector<OpCase> embedding_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  if (rem) {
    uint64_t k = 0;
    for (int bits : {2, 4, 8})
      for (int64_t tokens : {1, 33})
        for (int64_t dim : {64, 4096 + 64})
          out.push_back(embedding_case("remainder " + std::to_string(bits) + "-bit " + std::to_string(tokens) +
                                           " tokens dim " + std::to_string(dim),
                                       tokens, 999, dim, bits, seed + ++k));
    // Rows past the 8192- and 16384-wide buffers engines size for, one token (decode); a small
    // table keeps them cheap.
    for (int64_t dim : {8192 + 64, 16384 + 64})
      for (int bits : {4, 8})
        out.push_back(embedding_case("remainder " + std::to_string(bits) + "-bit T 1 dim " + std::to_string(dim), 1, 67,
                                     dim, bits, seed + ++k));
    for (int bits : {2, 4, 8})
      out.push_back(embedding_invalid_ids_case("remainder " + std::to_string(bits) + "-bit invalid ids", 999, 128, bits,
                                               seed + ++k));
  }
  if (real) {
    // The real tables are 248320 rows (0.5-1 GB at the real dims): the real dims with a 1024-row
    // table, and the real vocab with one group per row, so ids 0 and 248319 go through the real
    // addressing.
    out.push_back(embedding_case("A17B dim, decode", 1, 1024, 4096, 4, seed));
    out.push_back(embedding_case("A3B dim, decode", 1, 1024, 2048, 4, seed + 1));
    out.push_back(embedding_case("A3B dim, prefill 64", 64, 1024, 2048, 4, seed + 2));
    out.push_back(embedding_case("real vocab 248320, dim 64", 16, 248320, 64, 4, seed + 3));
  }
  return out;
}

}  // namespace moe::compare
