// router_topk's three-way check: the shapes, inputs and bounds of spec/router_topk_spec.h, judged
// by router_judge (the GPU cases' rules) under cpu_f32_model().
#include "check/checks.h"
#include "check/three_tiers.h"
#include "ops/router_topk.h"
#include "spec/router_topk_spec.h"

namespace moe {

std::vector<CheckResult> router_topk_check(uint64_t seed, CheckScope scope) {
  return check_shapes("router_topk", router_topk_shapes(scope_has_remainders(scope), scope_has_real(scope)), seed, [](const RouterTopkShape& s, CheckResult& res) {
    const RouterTopkParams& p = s.p;
    const std::vector<float> x = router_topk_inputs(p, res.seed, s.variant.data);
    const size_t n = size_t(p.tokens * p.k);
    std::vector<int32_t> truth_i(n), r32_i(n), fast_i(n);
    std::vector<float> truth_w(n), r32_w(n), fast_w(n);
    res.truth_seconds = time_call([&] { router_topk_ref<double>(p, x, truth_i, truth_w); });
    res.ref32.seconds = time_call([&] { router_topk_ref<float>(p, x, r32_i, r32_w); });
    res.fast.seconds = time_call([&] { router_topk_fast(p, x, fast_i, fast_w); });
    const RouterBounds b = router_topk_bounds(p, x, truth_i, truth_w, cpu_f32_model());
    router_judge(res.ref32, p.experts, p.k, truth_i, truth_w, r32_i, r32_w, b);
    router_judge(res.fast, p.experts, p.k, truth_i, truth_w, fast_i, fast_w, b);
  });
}

}  // namespace moe
