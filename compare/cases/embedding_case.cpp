#include <bit>
#include <limits>
#include <string>

#include "compare/cases/case_util.h"
#include "compare/cases/instances.h"
#include "ops/embedding.h"
#include "spec/embedding_spec.h"

namespace moe::compare {
namespace {

HostTensor i32_tensor(std::span<const int32_t> v) {
  HostTensor t;
  t.type = ElemType::I32, t.elems = int64_t(v.size());
  for (int32_t x : v) t.words.push_back(std::bit_cast<uint32_t>(x));
  return t;
}

}  // namespace

// embedding's GPU cases: the shapes and inputs of spec/embedding_spec.h, bit-exact (the spec says why).
OpCase embedding_instance(const std::string& label, uint64_t seed, const EmbeddingParams& p, const QuantMatrix& table,
                          std::span<const int32_t> ids) {
  OpCase c = new_case("embedding", label, seed);
  set_vars(c, p);
  std::vector<float> y(static_cast<size_t>(p.tokens * p.dim));
  embedding_ref<double>(p, table, ids, y);
  add_quant_tensors(c, "table", table);
  c.tensors["ids"] = i32_tensor(ids);
  c.tensors["y"] = output_f32(p.tokens * p.dim);
  set_exact_output(c, "y", y);
  return c;
}

namespace {

// Ids outside [0, vocab): the kernel's contract writes their rows NaN (any payload) and never
// addresses the table with them. The truth: the valid rows from the reference (an in-range id
// stands in for each invalid one), the invalid rows NaN. One invalid id at token 0 (a write
// before it leaves the buffer) and one at the last token (a write past it leaves the buffer),
// valid rows between them (a shifted write lands in a neighbour's row or leaves part of its own
// unwritten).
OpCase embedding_invalid_ids_case(const std::string& label, uint64_t seed, const EmbeddingParams& p,
                                  const EmbeddingInputs& in) {
  std::vector<int32_t> valid(in.ids);
  for (auto& id : valid)
    if (id < 0 || id >= p.vocab) id = 0;
  OpCase c = embedding_instance(label, seed, p, in.table.view(), valid);
  c.tensors["ids"] = i32_tensor(in.ids);
  std::vector<double>& truth = c.truth["y"];
  for (size_t t = 0; t < in.ids.size(); ++t)
    if (in.ids[t] < 0 || in.ids[t] >= p.vocab)
      for (int64_t d = 0; d < p.dim; ++d) truth[t * size_t(p.dim) + size_t(d)] = std::numeric_limits<double>::quiet_NaN();
  return c;
}

}  // namespace

std::vector<OpCase> embedding_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  for (const auto& s : embedding_shapes(rem, real)) {
    const EmbeddingInputs in = embedding_inputs(s.p, seed + s.seed_offset, s.variant.invalid_ids);
    out.push_back(s.variant.invalid_ids ? embedding_invalid_ids_case(s.label, seed + s.seed_offset, s.p, in)
                            : embedding_instance(s.label, seed + s.seed_offset, s.p, in.table.view(), in.ids));
  }
  return out;
}

}  // namespace moe::compare
