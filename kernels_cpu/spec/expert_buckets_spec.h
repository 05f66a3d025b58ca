// expert_buckets' spec: its shapes and its seeded inputs, read by the CPU three-way check
// (kernels_cpu/check/expert_buckets_check.cpp) and the GPU cases
// (compare/cases/expert_buckets_case.cpp, also for mutate). The op itself:
// kernels_cpu/ops/expert_buckets.h. Its bound is 0 for every output under any precision model:
// the op is data movement (integers and copied floats), so a row order other than the op's
// (tokens ascending inside a bucket), a wrong offset, or a weight computed instead of copied (a
// lost -0.0, a flushed subnormal) is a wrong result, with no tolerance to argue.
#pragma once
#include <vector>

#include "ops/expert_buckets.h"
#include "spec/shape.h"

namespace moe {

// Routing as a router produces it: K distinct experts per token, skewed towards a few hot
// experts (half the picks from the first max(K, E/16) experts), so buckets range from empty to
// holding most tokens. Weights: positive, renormalised per token, in the router's descending
// order. `specials` puts -0.0 and a subnormal among the weights (data movement must keep the
// sign of zero and must not flush denormals).
struct ExpertBucketsInputs {
  std::vector<int32_t> idx;
  std::vector<float> w;
};
ExpertBucketsInputs expert_buckets_inputs(const ExpertBucketsParams& p, uint64_t seed, bool specials);

struct ExpertBucketsVariant {
  bool specials = false;
  bool gpu = true;  // no tokens: nothing for the GPU to write or compare
};
using ExpertBucketsShape = SpecShape<ExpertBucketsParams, ExpertBucketsVariant>;
// Remainders: one expert, one slot; K = E (every token in every bucket); odd E and K; rows that
// do not fill the last chunk of a workgroup's lanes; more experts than a workgroup has lanes;
// K above the models' 10 and Metal's 16; E = K = 4096 (the GPU manifest's limit); no tokens.
// Real: A17B (512 experts, top-10, the engines' 4) and A3B (256, top-8), decode and prefill.
std::vector<ExpertBucketsShape> expert_buckets_shapes(bool remainders, bool real);

}  // namespace moe
