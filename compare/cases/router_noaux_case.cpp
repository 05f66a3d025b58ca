#include <string>

#include "compare/cases/bound_mode.h"
#include "compare/cases/case_util.h"
#include "compare/cases/conventions.h"
#include "compare/cases/instances.h"
#include "spec/router_noaux_spec.h"

namespace moe::compare {

// router_noaux's GPU cases: the shapes, inputs and bounds of spec/router_noaux_spec.h under the
// device's precision model (those of its shapes the GPU runs). The kernel's slots are ordered by
// w (descending, ties by ascending expert: the truth's rows are sorted to that order), or with
// the convention slot_order = 1 by c as the truth gives them.
OpCase router_noaux_instance(const std::string& label, uint64_t seed, const RouterNoauxParams& p,
                             std::span<const float> x, std::span<const float> bias) {
  MOE_CHECK(p.slot_order == 0 || p.slot_order == 1,
            "router_noaux: slot_order=" << p.slot_order << ", expected 0 (by weight) or 1 (by biased score)");
  OpCase c = new_case("router_noaux", label, seed);
  set_vars(c, p);
  std::vector<int32_t> idx(size_t(p.tokens * p.k));
  std::vector<float> w(idx.size());
  router_noaux_ref<double>(p, x, bias, idx, w);
  if (p.slot_order == 0) router_sort_rows(idx, w, p.k);
  RouterBounds b = router_noaux_bounds(p, x, bias, idx, w, device_model());
  c.tensors["logits"] = f32_tensor(x);
  c.tensors["bias"] = f32_tensor(bias);
  set_routing_outputs(c, p.k, idx, w, std::move(b.score), std::move(b.score_bound), std::move(b.w_bound));
  return c;
}

std::vector<OpCase> router_noaux_conv_cases(bool rem, bool real, uint64_t seed, const Conventions& conv) {
  std::vector<OpCase> out;
  for (const RouterNoauxShape& s : router_noaux_shapes(rem, real)) {
    if (!s.variant.gpu) continue;
    const RouterNoauxParams p = with_conventions(s.p, conv);
    const RouterNoauxInputs in = router_noaux_inputs(p, seed + s.seed_offset, s.variant.data, device_model());
    out.push_back(router_noaux_instance(s.label, seed + s.seed_offset, p, in.logits, in.bias));
  }
  return out;
}

std::vector<OpCase> router_noaux_cases(bool rem, bool real, uint64_t seed) {
  return router_noaux_conv_cases(rem, real, seed, {});
}

}  // namespace moe::compare
