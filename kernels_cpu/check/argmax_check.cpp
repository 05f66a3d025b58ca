// argmax's three-way check: the shapes and inputs of spec/argmax_spec.h; every tier must return
// the very same index (the spec says why).
#include "core/params.h"
#include "ops/argmax.h"
#include "spec/argmax_spec.h"

namespace moe {

std::vector<CheckResult> argmax_check(uint64_t seed, CheckScope scope) {
  std::vector<CheckResult> out;
  for (const auto& s : argmax_shapes(scope_has_remainders(scope), scope_has_real(scope))) {
    const ArgmaxParams& p = s.p;
    const std::vector<float> x = argmax_inputs(p, seed + s.seed_offset, s.variant);
    std::vector<int32_t> truth(size_t(p.rows)), r32(size_t(p.rows)), fast(size_t(p.rows));
    CheckResult res{"argmax", s.label, params_to_string(p), seed + s.seed_offset};
    res.truth_seconds = time_call([&] { argmax_ref<double>(p, x, truth); });
    res.ref32.seconds = time_call([&] { argmax_ref<float>(p, x, r32); });
    res.fast.seconds = time_call([&] { argmax_fast(p, x, fast); });
    res.ref32.add_exact("idx", truth, r32);
    res.fast.add_exact("idx", truth, fast);
    out.push_back(std::move(res));
  }
  return out;
}

}  // namespace moe
