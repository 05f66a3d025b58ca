#include <string>

#include "compare/cases/bound_mode.h"
#include "compare/cases/case_util.h"
#include "compare/cases/instances.h"
#include "spec/router_topk_spec.h"

namespace moe::compare {

// router_topk's GPU cases: the shapes, inputs and bounds of spec/router_topk_spec.h under the
// device's precision model (those of its shapes the GPU runs).
OpCase router_topk_instance(const std::string& label, uint64_t seed, const RouterTopkParams& p,
                            std::span<const float> x) {
  OpCase c = new_case("router_topk", label, seed);
  set_vars(c, p);
  std::vector<int32_t> idx(size_t(p.tokens * p.k));
  std::vector<float> w(idx.size());
  router_topk_ref<double>(p, x, idx, w);
  RouterBounds b = router_topk_bounds(p, x, idx, w, device_model());
  c.tensors["logits"] = f32_tensor(x);
  set_routing_outputs(c, p.k, idx, w, std::move(b.score), std::move(b.score_bound), std::move(b.w_bound));
  return c;
}

std::vector<OpCase> router_topk_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  for (const RouterTopkShape& s : router_topk_shapes(rem, real))
    if (s.variant.gpu)
      out.push_back(router_topk_instance(s.label, seed + s.seed_offset, s.p,
                                         router_topk_inputs(s.p, seed + s.seed_offset, s.variant.data)));
  return out;
}

}  // namespace moe::compare
