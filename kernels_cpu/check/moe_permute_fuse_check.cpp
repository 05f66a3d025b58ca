// moe_permute_fuse's three-way check: the shapes and inputs of spec/moe_permute_fuse_spec.h, the
// bound moe_permute_fuse_bound under cpu_f32_model() over the rows' swiglu_expert_bound (derived in
// spec/swiglu_expert_spec.cpp).
#include "check/checks.h"
#include "core/params.h"
#include "spec/moe_permute_fuse_spec.h"

namespace moe {

std::vector<CheckResult> moe_permute_fuse_check(uint64_t seed, CheckScope scope) {
  std::vector<CheckResult> out;
  for (const MoePermuteFuseShape& s : moe_permute_fuse_shapes(scope_has_remainders(scope), scope_has_real(scope))) {
    if (!s.variant.cpu) continue;
    const MoePermuteFuseParams& p = s.p;
    const MoePermuteFuseInputs in = moe_permute_fuse_inputs(p, s.variant, seed + s.seed_offset);
    std::vector<float> truth = in.out_in, r32 = in.out_in, fast = in.out_in;
    CheckResult res{"moe_permute_fuse", moe_permute_fuse_label(s, in),
                    params_to_string(p) + " k=" + std::to_string(s.variant.k), seed + s.seed_offset};
    res.truth_seconds = time_call([&] { moe_permute_fuse_ref<double>(p, in.b, in.experts, in.x, truth); });
    res.ref32.seconds = time_call([&] { moe_permute_fuse_ref<float>(p, in.b, in.experts, in.x, r32); });
    res.fast.seconds = time_call([&] { moe_permute_fuse_fast(p, in.b, in.experts, in.x, fast); });
    const PermuteCpuRowBounds rows = moe_permute_fuse_cpu_rows(p, in);
    const PrecisionModel m = cpu_f32_model();
    res.ref32.add("out", truth, r32, moe_permute_fuse_bound(p, s.variant.k, in.b, in.out_in, rows.ref32, truth, m));
    res.fast.add("out", truth, fast, moe_permute_fuse_bound(p, s.variant.k, in.b, in.out_in, rows.fast, truth, m));
    out.push_back(std::move(res));
  }
  return out;
}

}  // namespace moe
