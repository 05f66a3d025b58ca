// embedding's three-way check: the shapes and inputs of spec/embedding_spec.h (but invalid ids,
// which the CPU tiers reject), bound 0 (the spec says why).
#include "check/checks.h"
#include "check/three_tiers.h"
#include "ops/embedding.h"
#include "spec/embedding_spec.h"

namespace moe {

std::vector<CheckResult> embedding_check(uint64_t seed, CheckScope scope) {
  return check_shapes("embedding", embedding_shapes(scope_has_remainders(scope), scope_has_real(scope)), seed, [](const auto& s, CheckResult& res) {
    const EmbeddingInputs in = embedding_inputs(s.p, res.seed, false);
    judge(res, "y",
          run_tiers(res, size_t(s.p.tokens * s.p.dim), embedding_ref<double>, embedding_ref<float>, embedding_fast,
                    s.p, in.table.view(), in.ids),
          0.0);
  });
}

}  // namespace moe
