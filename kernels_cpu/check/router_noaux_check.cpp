// router_noaux's three-way check: the shapes, inputs and bounds of spec/router_noaux_spec.h,
// judged by router_judge (the GPU cases' rules) under cpu_f32_model().
#include "check/checks.h"
#include "check/three_tiers.h"
#include "ops/router_noaux.h"
#include "spec/router_noaux_spec.h"

namespace moe {

std::vector<CheckResult> router_noaux_check(uint64_t seed, CheckScope scope) {
  const PrecisionModel m = cpu_f32_model();
  return check_shapes("router_noaux", router_noaux_shapes(scope_has_remainders(scope), scope_has_real(scope)), seed, [&](const RouterNoauxShape& s, CheckResult& res) {
    const RouterNoauxParams& p = s.p;
    const RouterNoauxInputs in = router_noaux_inputs(p, res.seed, s.variant.data, m);
    const size_t n = size_t(p.tokens * p.k);
    std::vector<int32_t> truth_i(n), r32_i(n), fast_i(n);
    std::vector<float> truth_w(n), r32_w(n), fast_w(n);
    res.truth_seconds = time_call([&] { router_noaux_ref<double>(p, in.logits, in.bias, truth_i, truth_w); });
    res.ref32.seconds = time_call([&] { router_noaux_ref<float>(p, in.logits, in.bias, r32_i, r32_w); });
    res.fast.seconds = time_call([&] { router_noaux_fast(p, in.logits, in.bias, fast_i, fast_w); });
    router_sort_rows(truth_i, truth_w, p.k);  // the judge's slot order: by weight
    const RouterBounds b = router_noaux_bounds(p, in.logits, in.bias, truth_i, truth_w, m);
    router_judge(res.ref32, p.experts, p.k, truth_i, truth_w, r32_i, r32_w, b);
    router_judge(res.fast, p.experts, p.k, truth_i, truth_w, fast_i, fast_w, b);
  });
}

}  // namespace moe
