// delta_net's three-way check: the shapes, inputs and bound of spec/delta_net_spec.h. Each tier
// runs token by token from the truth's f32 state, with an error tracker reset every token: the
// bound of one isolated step. Why per token: every tier stores an f32 state, so the tiers' and
// the truth's states drift apart by amounts that depend on how the recurrence amplifies earlier
// errors (the model's conditioning, not the tier's accuracy); together with "a T-token call
// equals T one-token calls bit for bit" (tested for every tier) it covers the multi-token path.
// The GPU cases carry the tracker over the tokens instead (compare/cases/delta_net_case.cpp).
#include <span>
#include <string>

#include "check/checks.h"
#include "check/three_tiers.h"
#include "ops/delta_net.h"
#include "spec/delta_net_spec.h"

namespace moe {
namespace {

void run_case(const DeltaNetShape& s, CheckResult& res) {
  const DeltaNetParams& p = s.p;
  const DeltaNetInputs in = delta_net_inputs(p, res.seed, s.variant.special_gates);
  const int64_t T = p.tokens, Hk = p.k_heads, Hv = p.v_heads, dk = p.key_dim, dv = p.value_dim;
  DeltaNetParams p1 = p;
  p1.tokens = 1;
  std::vector<float> S = in.state0, st_t, st_r, st_f;
  std::vector<float> o_t(size_t(Hv * dv)), o_r(o_t.size()), o_f(o_t.size());
  std::vector<double> o_bound(o_t.size());
  auto sub = [](const std::vector<float>& v, int64_t off, int64_t n) {
    return std::span<const float>(v).subspan(size_t(off), size_t(n));
  };
  for (int64_t t = 0; t < T; ++t) {
    const auto qt = sub(in.q, t * Hk * dk, Hk * dk), kt = sub(in.k, t * Hk * dk, Hk * dk);
    const auto vt = sub(in.v, t * Hv * dv, Hv * dv), gt = sub(in.g, t * Hv, Hv), bt = sub(in.beta, t * Hv, Hv);
    st_t = S, st_r = S, st_f = S;
    res.truth_seconds += time_call([&] { delta_net_ref<double>(p1, qt, kt, vt, gt, bt, st_t, o_t); });
    res.ref32.seconds += time_call([&] { delta_net_ref<float>(p1, qt, kt, vt, gt, bt, st_r, o_r); });
    res.fast.seconds += time_call([&] { delta_net_fast(p1, qt, kt, vt, gt, bt, st_f, o_f); });
    DeltaNetErrorTracker tr(p);  // zero: this token alone, from the truth's state S
    delta_net_token_bound(p, in, t, S, st_t, o_t, tr, o_bound.data(), cpu_f32_model());
    res.ref32.add("o", o_t, o_r, o_bound);
    res.fast.add("o", o_t, o_f, o_bound);
    res.ref32.add("state", st_t, st_r, tr.b);
    res.fast.add("state", st_t, st_f, tr.b);
    S.swap(st_t);
  }
}

}  // namespace

std::vector<CheckResult> delta_net_check(uint64_t seed, CheckScope scope) {
  return check_shapes("delta_net", delta_net_shapes(scope_has_remainders(scope), scope_has_real(scope)), seed,
                      [](const DeltaNetShape& s, CheckResult& res) { run_case(s, res); });
}

std::vector<CheckResult> delta_net_check_conventions(uint64_t seed, CheckScope scope, const DeltaNetParams& conv) {
  std::vector<DeltaNetShape> shapes = delta_net_shapes(scope_has_remainders(scope), scope_has_real(scope));
  for (DeltaNetShape& s : shapes)
    s.p.decay_log = conv.decay_log, s.p.head_group = conv.head_group, s.p.out_scale = conv.out_scale;
  return check_shapes("delta_net", shapes, seed, [](const DeltaNetShape& s, CheckResult& res) { run_case(s, res); });
}

}  // namespace moe
