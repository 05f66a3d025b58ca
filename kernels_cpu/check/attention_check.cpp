// attention's three-way check: the shapes, inputs and bound of spec/attention_spec.h. A shape the
// GPU runs over several calls runs here as one call of all its tokens (the same causal result).
#include "check/checks.h"
#include "core/params.h"
#include "ops/attention.h"
#include "spec/attention_spec.h"

namespace moe {

CheckResult attention_check_one(const char* label, const AttentionParams& p, uint64_t seed) {
  const AttentionInputs in = attention_inputs(p, seed);
  std::vector<float> kc_want, vc_want;
  attention_append(p, in, kc_want, vc_want);
  std::vector<float> truth(in.q.size()), r32(in.q.size()), fast(in.q.size());
  std::vector<float> kc_t = in.k_cache, vc_t = in.v_cache, kc_r = in.k_cache, vc_r = in.v_cache;
  std::vector<float> kc_f = in.k_cache, vc_f = in.v_cache;
  CheckResult res{"attention", label, params_to_string(p), seed};
  res.truth_seconds = time_call([&] { attention_ref<double>(p, in.q, in.gate, in.k, in.v, kc_t, vc_t, truth); });
  res.ref32.seconds = time_call([&] { attention_ref<float>(p, in.q, in.gate, in.k, in.v, kc_r, vc_r, r32); });
  res.fast.seconds = time_call([&] { attention_fast(p, in.q, in.gate, in.k, in.v, kc_f, vc_f, fast); });
  // Chunked: one bound covers the one-pass f32 tier and the fast tier's online softmax.
  const std::vector<double> bound =
      attention_bound(p, in.q, in.gate, kc_want, vc_want, truth, kAttentionFastChunk, cpu_f32_model());
  res.ref32.add("o", truth, r32, bound);
  res.fast.add("o", truth, fast, bound);
  // The append is data movement: bit-exact (bound 0), rows outside [past, past + T) unchanged.
  res.ref32.add("k_cache", kc_want, kc_r, 0.0);
  res.ref32.add("v_cache", vc_want, vc_r, 0.0);
  res.fast.add("k_cache", kc_want, kc_f, 0.0);
  res.fast.add("v_cache", vc_want, vc_f, 0.0);
  return res;
}

std::vector<CheckResult> attention_check(uint64_t seed, CheckScope scope) {
  std::vector<CheckResult> out;
  for (const AttentionShape& s : attention_shapes(scope_has_remainders(scope), scope_has_real(scope)))
    out.push_back(attention_check_one(s.label.c_str(), s.p, seed + s.seed_offset));
  return out;
}

}  // namespace moe
