// embedding's three-way check: the shapes and inputs of spec/embedding_spec.h (but invalid ids,
// which the CPU tiers reject), bound 0 (the spec says why).
#include "core/params.h"
#include "ops/embedding.h"
#include "spec/embedding_spec.h"

namespace moe {

std::vector<CheckResult> embedding_check(uint64_t seed, CheckScope scope) {
  std::vector<CheckResult> out;
  for (const auto& s : embedding_shapes(scope_has_remainders(scope), scope_has_real(scope))) {
    if (s.variant) continue;
    const EmbeddingParams& p = s.p;
    const EmbeddingInputs in = embedding_inputs(p, seed + s.seed_offset, false);
    const QuantMatrix table = in.table.view();
    std::vector<float> truth(size_t(p.tokens * p.dim)), r32(truth.size()), fast(truth.size());
    CheckResult res{"embedding", s.label, params_to_string(p), seed + s.seed_offset};
    res.truth_seconds = time_call([&] { embedding_ref<double>(p, table, in.ids, truth); });
    res.ref32.seconds = time_call([&] { embedding_ref<float>(p, table, in.ids, r32); });
    res.fast.seconds = time_call([&] { embedding_fast(p, table, in.ids, fast); });
    res.ref32.add("y", truth, r32, 0.0);
    res.fast.add("y", truth, fast, 0.0);
    out.push_back(std::move(res));
  }
  return out;
}

}  // namespace moe
