// expert_buckets' three-way check: the shapes and inputs of spec/expert_buckets_spec.h; every
// output exact (data movement: the spec's bound 0).
#include "check/checks.h"
#include "check/three_tiers.h"
#include "ops/expert_buckets.h"
#include "spec/expert_buckets_spec.h"

namespace moe {
namespace {

void compare(TierReport& rep, const ExpertBuckets& truth, const ExpertBuckets& b) {
  rep.add_exact("expert_ids", truth.expert_ids, b.expert_ids);
  const std::vector<int32_t> o1(truth.offsets.begin(), truth.offsets.end()), o2(b.offsets.begin(), b.offsets.end());
  rep.add_exact("offsets", o1, o2);
  rep.add_exact("token_idx", truth.token_idx, b.token_idx);
  rep.add("weights", truth.weights, b.weights, 0.0);  // bound 0: bit-equality (and equal sizes)
}

}  // namespace

std::vector<CheckResult> expert_buckets_check(uint64_t seed, CheckScope scope) {
  return check_shapes("expert_buckets", expert_buckets_shapes(scope_has_remainders(scope), scope_has_real(scope)), seed, [](const ExpertBucketsShape& s, CheckResult& res) {
    const ExpertBucketsInputs in = expert_buckets_inputs(s.p, res.seed, s.variant.specials);
    ExpertBuckets truth, r32, fast;
    res.truth_seconds = time_call([&] { expert_buckets_ref<double>(s.p, in.idx, in.w, truth); });
    res.ref32.seconds = time_call([&] { expert_buckets_ref<float>(s.p, in.idx, in.w, r32); });
    res.fast.seconds = time_call([&] { expert_buckets_fast(s.p, in.idx, in.w, fast); });
    compare(res.ref32, truth, r32);
    compare(res.fast, truth, fast);
  });
}

}  // namespace moe
