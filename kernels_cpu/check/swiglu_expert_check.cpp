// swiglu_expert's three-way check: the shapes and inputs of spec/swiglu_expert_spec.h, the tiers'
// bound swiglu_expert_bound (derived in spec/swiglu_expert_spec.cpp).
#include "check/checks.h"
#include "check/three_tiers.h"
#include "ops/swiglu_expert.h"
#include "spec/swiglu_expert_spec.h"

namespace moe {

std::vector<CheckResult> swiglu_expert_check(uint64_t seed, CheckScope scope) {
  return check_shapes(
      "swiglu_expert", swiglu_expert_shapes(scope_has_remainders(scope), scope_has_real(scope)), seed,
      [](const SwigluExpertShape& s, CheckResult& res) {
        const SwigluExpertInputs in = swiglu_expert_inputs(s.p, res.seed);
        std::vector<uint8_t> blob;
        ExpertWeights e = in.e.view();
        if (s.variant.via_blob) {  // the engines' path: one packed blob read in place
          blob = pack_expert_blob(e);
          e = expert_from_blob(blob.data(), blob.size(), s.p.hidden, s.p.inter, s.p.bits);
        }
        const TierOutputs<> y = run_tiers(res, in.x.size(), swiglu_expert_ref<double>, swiglu_expert_ref<float>,
                                          swiglu_expert_fast, s.p, e, in.x);
        const SwigluExpertBound b = swiglu_expert_bound(s.p, e, in.x);
        res.ref32.add("y", y.truth, y.r32, b.ref32);
        res.fast.add("y", y.truth, y.fast, b.fast);
      });
}

}  // namespace moe
