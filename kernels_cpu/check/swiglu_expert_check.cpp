// swiglu_expert's three-way check: the shapes and inputs of spec/swiglu_expert_spec.h, the tiers'
// bound swiglu_expert_bound (derived in spec/swiglu_expert_spec.cpp).
#include "core/params.h"
#include "ops/swiglu_expert.h"
#include "spec/swiglu_expert_spec.h"

namespace moe {

std::vector<CheckResult> swiglu_expert_check(uint64_t seed, CheckScope scope) {
  std::vector<CheckResult> out;
  for (const SwigluExpertShape& s : swiglu_expert_shapes(scope_has_remainders(scope), scope_has_real(scope))) {
    if (!s.variant.cpu) continue;
    const SwigluExpertParams& p = s.p;
    const SwigluExpertInputs in = swiglu_expert_inputs(p, seed + s.seed_offset);
    std::vector<uint8_t> blob;
    ExpertWeights e = in.e.view();
    if (s.variant.via_blob) {  // the engines' path: one packed blob read in place
      blob = pack_expert_blob(e);
      e = expert_from_blob(blob.data(), blob.size(), p.hidden, p.inter, p.bits);
    }
    std::vector<float> truth(in.x.size()), r32(in.x.size()), fast(in.x.size());
    CheckResult res{"swiglu_expert", s.label, params_to_string(p), seed + s.seed_offset};
    res.truth_seconds = time_call([&] { swiglu_expert_ref<double>(p, e, in.x, truth); });
    res.ref32.seconds = time_call([&] { swiglu_expert_ref<float>(p, e, in.x, r32); });
    res.fast.seconds = time_call([&] { swiglu_expert_fast(p, e, in.x, fast); });
    const SwigluExpertBound b = swiglu_expert_bound(p, e, in.x);
    res.ref32.add("y", truth, r32, b.ref32);
    res.fast.add("y", truth, fast, b.fast);
    out.push_back(std::move(res));
  }
  return out;
}

}  // namespace moe
