// matvec_ggml's three-way check: the shapes, inputs and bound of spec/matvec_ggml_spec.h (bound 0
// for the exact inputs).
#include "check/checks.h"
#include "check/three_tiers.h"
#include "ops/matvec_ggml.h"
#include "spec/matvec_ggml_spec.h"

namespace moe {

std::vector<CheckResult> matvec_ggml_check(uint64_t seed, CheckScope scope) {
  return check_shapes("matvec_ggml", matvec_ggml_shapes(scope_has_remainders(scope), scope_has_real(scope)), seed,
                      [](const MatvecGgmlShape& s, CheckResult& res) {
                        const MatvecGgmlInputs in = matvec_ggml_inputs(s.p, res.seed, s.variant.exact);
                        const BlockMatrix W = in.view(s.p);
                        const std::span<const float> x(in.x);
                        const TierOutputs<> y =
                            run_tiers(res, size_t(s.p.tokens * s.p.rows), matvec_ggml_ref<double>,
                                      matvec_ggml_ref<float>, matvec_ggml_fast, s.p, W, x);
                        if (s.variant.exact) return judge(res, "y", y, 0.0);
                        // The reference rounds each weight once; the fast tier may factor the
                        // 4-bit formats (matvec_ggml_fast_model): each tier its own bound.
                        res.ref32.add("y", y.truth, y.r32, matvec_ggml_bound(s.p, W, x, y.truth, cpu_f32_model()));
                        res.fast.add("y", y.truth, y.fast,
                                     matvec_ggml_bound(s.p, W, x, y.truth, matvec_ggml_fast_model(uint32_t(s.p.type))));
                      });
}

}  // namespace moe
