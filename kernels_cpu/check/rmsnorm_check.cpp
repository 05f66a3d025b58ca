// rmsnorm's three-way check: the shapes, inputs and bound of spec/rmsnorm_spec.h.
#include "core/params.h"
#include "ops/rmsnorm.h"
#include "spec/norm_bound.h"
#include "spec/rmsnorm_spec.h"

namespace moe {

std::vector<CheckResult> rmsnorm_check(uint64_t seed, CheckScope scope) {
  std::vector<CheckResult> out;
  for (const auto& s : rmsnorm_shapes(scope_has_remainders(scope), scope_has_real(scope))) {
    const RmsNormParams& p = s.p;
    const RmsNormInputs in = rmsnorm_inputs(p, seed + s.seed_offset);
    const std::vector<float> w = widen_bf16(in.w);
    std::vector<float> truth(in.x.size()), r32(in.x.size()), fast(in.x.size());
    CheckResult res{"rmsnorm", s.label, params_to_string(p), seed + s.seed_offset};
    res.truth_seconds = time_call([&] { rmsnorm_ref<double>(p, in.x, w, truth); });
    res.ref32.seconds = time_call([&] { rmsnorm_ref<float>(p, in.x, w, r32); });
    res.fast.seconds = time_call([&] { rmsnorm_fast(p, in.x, w, fast); });
    const std::vector<double> bound = rmsnorm_bound(p, truth, cpu_f32_model());
    res.ref32.add("y", truth, r32, bound);
    res.fast.add("y", truth, fast, bound);
    out.push_back(std::move(res));
  }
  return out;
}

}  // namespace moe
