// residual_add's three-way check: the shapes and inputs of spec/residual_add_spec.h, bound 0 (the
// spec says why).
#include "core/params.h"
#include "ops/residual_add.h"
#include "spec/residual_add_spec.h"

namespace moe {

std::vector<CheckResult> residual_add_check(uint64_t seed, CheckScope scope) {
  std::vector<CheckResult> out;
  for (const auto& s : residual_add_shapes(scope_has_remainders(scope), scope_has_real(scope))) {
    const ResidualAddParams& p = s.p;
    const ResidualAddInputs in = residual_add_inputs(p, seed + s.seed_offset);
    std::vector<float> truth(size_t(p.n)), r32(size_t(p.n)), fast(size_t(p.n));
    CheckResult res{"residual_add", s.label, params_to_string(p), seed + s.seed_offset};
    res.truth_seconds = time_call([&] { residual_add_ref<double>(p, in.a, in.b, truth); });
    res.ref32.seconds = time_call([&] { residual_add_ref<float>(p, in.a, in.b, r32); });
    res.fast.seconds = time_call([&] { residual_add_fast(p, in.a, in.b, fast); });
    res.ref32.add("y", truth, r32, 0.0);
    res.fast.add("y", truth, fast, 0.0);
    out.push_back(std::move(res));
  }
  return out;
}

}  // namespace moe
