// moe_combine's three-way check: the shapes, inputs and bound of spec/moe_combine_spec.h.
#include "core/params.h"
#include "ops/moe_combine.h"
#include "spec/moe_combine_spec.h"

namespace moe {

std::vector<CheckResult> moe_combine_check(uint64_t seed, CheckScope scope) {
  std::vector<CheckResult> out;
  for (const auto& s : moe_combine_shapes(scope_has_remainders(scope), scope_has_real(scope))) {
    const MoeCombineParams& p = s.p;
    const MoeCombineInputs in = moe_combine_inputs(p, seed + s.seed_offset);
    const size_t n = size_t(p.tokens * p.dim);
    std::vector<float> truth(n), r32(n), fast(n);
    CheckResult res{"moe_combine", s.label, params_to_string(p), seed + s.seed_offset};
    res.truth_seconds = time_call([&] { moe_combine_ref<double>(p, in.h, in.e, in.w, in.sh, in.gamma, truth); });
    res.ref32.seconds = time_call([&] { moe_combine_ref<float>(p, in.h, in.e, in.w, in.sh, in.gamma, r32); });
    res.fast.seconds = time_call([&] { moe_combine_fast(p, in.h, in.e, in.w, in.sh, in.gamma, fast); });
    const std::vector<double> bound =
        moe_combine_bound(p, in.h, in.e, in.w, in.sh, in.gamma, truth, cpu_f32_model());
    res.ref32.add("out", truth, r32, bound);
    res.fast.add("out", truth, fast, bound);
    out.push_back(std::move(res));
  }
  return out;
}

}  // namespace moe
