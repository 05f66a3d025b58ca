// dequant_ggml's three-way check: the shapes and inputs of spec/dequant_ggml_spec.h, bound 0
// (bit-exact, derived there).
#include "check/checks.h"
#include "check/three_tiers.h"
#include "ops/dequant_ggml.h"
#include "spec/dequant_ggml_spec.h"

namespace moe {

std::vector<CheckResult> dequant_ggml_check(uint64_t seed, CheckScope scope) {
  return check_shapes("dequant_ggml", dequant_ggml_shapes(scope_has_remainders(scope), scope_has_real(scope)), seed,
                      [](const DequantGgmlShape& s, CheckResult& res) {
                        const std::vector<uint8_t> bytes = dequant_ggml_inputs(s.p, res.seed);
                        const BlockMatrix W{uint32_t(s.p.type), bytes.data(), s.p.rows, s.p.cols};
                        judge(res, "y",
                              run_tiers(res, size_t(s.p.rows * s.p.cols), dequant_ggml_ref<double>,
                                        dequant_ggml_ref<float>, dequant_ggml_fast, s.p, W),
                              0.0);
                      });
}

}  // namespace moe
