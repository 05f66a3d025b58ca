// conv1d_step's three-way check: the shapes, inputs and bound of spec/conv1d_step_spec.h, each
// shape's tokens in one call (a T-token call equals T one-token calls bit for bit in every tier,
// tested). The fast tier's exp is Eigen's: cpu_eigen_model().
#include "check/checks.h"
#include "check/three_tiers.h"
#include "ops/conv1d_step.h"
#include "spec/conv1d_step_spec.h"

namespace moe {

std::vector<CheckResult> conv1d_step_check(uint64_t seed, CheckScope scope) {
  return check_shapes("conv1d_step", conv1d_step_shapes(scope_has_remainders(scope), scope_has_real(scope)), seed, [](const Conv1dStepShape& s, CheckResult& res) {
    const Conv1dStepParams& p = s.p;
    const Conv1dStepInputs in = conv1d_step_inputs(p, res.seed, s.variant);
    std::vector<float> truth(in.x.size()), r32(in.x.size()), fast(in.x.size());
    std::vector<float> st_t = in.state0, st_r = in.state0, st_f = in.state0;
    res.truth_seconds = time_call([&] { conv1d_step_ref<double>(p, in.x, in.w, st_t, truth); });
    res.ref32.seconds = time_call([&] { conv1d_step_ref<float>(p, in.x, in.w, st_r, r32); });
    res.fast.seconds = time_call([&] { conv1d_step_fast(p, in.x, in.w, st_f, fast); });
    const std::vector<double> bound = conv1d_step_bound(p, in.x, in.w, in.state0, truth, cpu_eigen_model());
    res.ref32.add("y", truth, r32, bound);
    res.fast.add("y", truth, fast, bound);
    res.ref32.add("state", st_t, st_r, 0.0);
    res.fast.add("state", st_t, st_f, 0.0);
  });
}

}  // namespace moe
