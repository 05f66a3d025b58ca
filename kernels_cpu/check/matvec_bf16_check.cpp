// matvec_bf16's three-way check: the shapes, inputs and bound of spec/matvec_bf16_spec.h.
#include "core/params.h"
#include "ops/matvec_bf16.h"
#include "spec/matvec_bf16_spec.h"

namespace moe {

std::vector<CheckResult> matvec_bf16_check(uint64_t seed, CheckScope scope) {
  std::vector<CheckResult> out;
  for (const MatvecBf16Shape& s : matvec_bf16_shapes(scope_has_remainders(scope), scope_has_real(scope))) {
    const MatvecBf16Params& p = s.p;
    const MatvecBf16Inputs in = matvec_bf16_inputs(p, seed + s.seed_offset);
    std::vector<float> truth(size_t(p.rows)), r32(truth.size()), fast(truth.size());
    CheckResult res{"matvec_bf16", s.label, params_to_string(p), seed + s.seed_offset};
    res.truth_seconds = time_call([&] { matvec_bf16_ref<double>(p, in.W, in.x, truth); });
    res.ref32.seconds = time_call([&] { matvec_bf16_ref<float>(p, in.W, in.x, r32); });
    res.fast.seconds = time_call([&] { matvec_bf16_fast(p, in.W, in.x, fast); });
    const std::vector<double> bound = matvec_bf16_bound(p, in.W, in.x, truth, cpu_f32_model());
    res.ref32.add("y", truth, r32, bound);
    res.fast.add("y", truth, fast, bound);
    out.push_back(std::move(res));
  }
  return out;
}

}  // namespace moe
