// dequant's three-way check: the shapes and inputs of spec/dequant_spec.h, bound 0 (bit-exact,
// derived there).
#include "core/params.h"
#include "ops/dequant.h"
#include "spec/dequant_spec.h"

namespace moe {

std::vector<CheckResult> dequant_check(uint64_t seed, CheckScope scope) {
  std::vector<CheckResult> out;
  for (const DequantShape& s : dequant_shapes(scope_has_remainders(scope), scope_has_real(scope))) {
    const DequantParams& p = s.p;
    const QuantStorage W = dequant_inputs(p, seed + s.seed_offset);
    std::vector<float> truth(size_t(p.rows * p.cols)), r32(truth.size()), fast(truth.size());
    CheckResult res{"dequant", s.label, params_to_string(p), seed + s.seed_offset};
    res.truth_seconds = time_call([&] { dequant_ref<double>(p, W.view(), truth); });
    res.ref32.seconds = time_call([&] { dequant_ref<float>(p, W.view(), r32); });
    res.fast.seconds = time_call([&] { dequant_fast(p, W.view(), fast); });
    res.ref32.add("y", truth, r32, 0.0);
    res.fast.add("y", truth, fast, 0.0);
    out.push_back(std::move(res));
  }
  return out;
}

}  // namespace moe
