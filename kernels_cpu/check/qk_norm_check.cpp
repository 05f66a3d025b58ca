// qk_norm's three-way check: the shapes, inputs and bound of spec/qk_norm_spec.h.
#include "check/checks.h"
#include "check/three_tiers.h"
#include "ops/qk_norm.h"
#include "spec/qk_norm_spec.h"

namespace moe {

namespace {

void run_case(const QkNormShape& s, CheckResult& res) {
  const QkNormParams& p = s.p;
  const QkNormInputs in = qk_norm_inputs(p, res.seed);
  const size_t n = in.q.size();
  std::vector<float> tq(n), tk(n), rq(n), rk(n), fq(n), fk(n);
  res.truth_seconds = time_call([&] { qk_norm_ref<double>(p, in.q, in.k, tq, tk); });
  res.ref32.seconds = time_call([&] { qk_norm_ref<float>(p, in.q, in.k, rq, rk); });
  res.fast.seconds = time_call([&] { qk_norm_fast(p, in.q, in.k, fq, fk); });
  const QkNormBounds b = qk_norm_bound(p, tq, tk, cpu_f32_model());
  res.ref32.add("q_out", tq, rq, b.q);
  res.ref32.add("k_out", tk, rk, b.k);
  res.fast.add("q_out", tq, fq, b.q);
  res.fast.add("k_out", tk, fk, b.k);
}

}  // namespace

std::vector<CheckResult> qk_norm_check(uint64_t seed, CheckScope scope) {
  return check_shapes("qk_norm", qk_norm_shapes(scope_has_remainders(scope), scope_has_real(scope)), seed, run_case);
}

std::vector<CheckResult> qk_norm_check_conventions(uint64_t seed, CheckScope scope, const QkNormParams& conv) {
  std::vector<QkNormShape> shapes = qk_norm_shapes(scope_has_remainders(scope), scope_has_real(scope));
  for (QkNormShape& s : shapes) s.p.eps_form = conv.eps_form, s.p.scaled = conv.scaled;
  return check_shapes("qk_norm", shapes, seed, run_case);
}

}  // namespace moe
