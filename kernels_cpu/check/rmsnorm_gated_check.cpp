// rmsnorm_gated's three-way check: the shapes, inputs and bound of spec/rmsnorm_gated_spec.h.
#include "core/params.h"
#include "ops/rmsnorm_gated.h"
#include "spec/norm_bound.h"
#include "spec/rmsnorm_gated_spec.h"

namespace moe {

std::vector<CheckResult> rmsnorm_gated_check(uint64_t seed, CheckScope scope) {
  std::vector<CheckResult> out;
  for (const auto& s : rmsnorm_gated_shapes(scope_has_remainders(scope), scope_has_real(scope))) {
    const RmsNormGatedParams& p = s.p;
    const RmsNormGatedInputs in = rmsnorm_gated_inputs(p, seed + s.seed_offset);
    const std::vector<float> w = widen_bf16(in.w);
    std::vector<float> truth(in.o.size()), r32(in.o.size()), fast(in.o.size());
    CheckResult res{"rmsnorm_gated", s.label, params_to_string(p), seed + s.seed_offset};
    res.truth_seconds = time_call([&] { rmsnorm_gated_ref<double>(p, in.o, in.z, w, truth); });
    res.ref32.seconds = time_call([&] { rmsnorm_gated_ref<float>(p, in.o, in.z, w, r32); });
    res.fast.seconds = time_call([&] { rmsnorm_gated_fast(p, in.o, in.z, w, fast); });
    const std::vector<double> bound = rmsnorm_gated_bound(p, in.o, in.z, w, truth, cpu_f32_model());
    res.ref32.add("y", truth, r32, bound);
    res.fast.add("y", truth, fast, bound);
    out.push_back(std::move(res));
  }
  return out;
}

}  // namespace moe
