#include <string>

#include "compare/cases/case_util.h"
#include "spec/expert_buckets_spec.h"

namespace moe::compare {
namespace {

HostTensor int_tensor(ElemType type, const std::vector<int32_t>& v, bool output) {
  HostTensor t;
  t.type = type, t.elems = int64_t(v.size()), t.output = output;
  for (int32_t x : v) t.words.push_back(uint32_t(x));
  return t;
}

// expert_buckets' GPU case: the shapes and inputs of spec/expert_buckets_spec.h; every output
// exact (the spec's bound 0).
OpCase buckets_case(const ExpertBucketsShape& sh, uint64_t seed) {
  const ExpertBucketsParams& p = sh.p;
  OpCase c = new_case("expert_buckets", sh.label, seed);
  set_vars(c, p);
  const ExpertBucketsInputs in = expert_buckets_inputs(p, seed, sh.variant.specials);
  ExpertBuckets b;
  expert_buckets_ref<double>(p, in.idx, in.w, b);
  // The dense layout of the kernel's contract: offsets over all experts (empty ones too).
  std::vector<int32_t> dense(size_t(p.experts + 1));
  size_t bucket = 0;
  for (int64_t e = 0; e <= p.experts; ++e) {
    while (bucket < b.expert_ids.size() && b.expert_ids[bucket] < e) ++bucket;
    dense[size_t(e)] = int32_t(b.offsets[bucket]);
  }
  c.tensors["idx"] = int_tensor(ElemType::I32, in.idx, false);
  c.tensors["w"] = f32_tensor(in.w);
  c.tensors["offsets"] = int_tensor(ElemType::U32, std::vector<int32_t>(dense.size(), 0), true);
  c.tensors["token_idx"] = int_tensor(ElemType::I32, std::vector<int32_t>(in.idx.size(), 0), true);
  c.tensors["weights"] = output_f32(p.tokens * p.k);
  set_exact_output(c, "offsets", std::vector<double>(dense.begin(), dense.end()));
  set_exact_output(c, "token_idx", std::vector<double>(b.token_idx.begin(), b.token_idx.end()));
  set_exact_output(c, "weights", b.weights);
  return c;
}

}  // namespace

std::vector<OpCase> expert_buckets_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  for (const ExpertBucketsShape& s : expert_buckets_shapes(rem, real))
    if (s.variant.gpu) out.push_back(buckets_case(s, seed + s.seed_offset));
  return out;
}

}  // namespace moe::compare
