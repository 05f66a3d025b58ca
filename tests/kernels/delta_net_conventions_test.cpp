// delta_net's conventions (ops/delta_net.h; docs/ops/linear-attention.md "Conventions"):
// decay_log, head_group and out_scale in every tier, their bound (spec/delta_net_spec.h), and
// the three-way check with each set.
#include <cmath>
#include <cstring>
#include <limits>

#include "check/checks.h"
#include "core/params.h"
#include "ops/delta_net.h"
#include "spec/delta_net_spec.h"
#include "kernels/delta_net_tiers.h"
#include "test_util.h"

namespace moe {
namespace {

using Fn = test::DeltaNetFn;
const auto& kTiers = test::kDeltaNetTiers;
using test::same_bits;

DeltaNetParams with(DeltaNetParams p, int64_t decay_log, int64_t head_group, float out_scale) {
  p.decay_log = decay_log, p.head_group = head_group, p.out_scale = out_scale;
  return p;
}

TEST(delta_net_conventions, HandComputedLogDecayAndOutScale) {
  // dk = dv = 2, g = log 1 = 0 (factor exp(0) = 1): S = [[1, 0], [0, 2]], k = [1, 0]: kv_mem =
  // [1, 0]; v = [3, 1], beta = 0.5: delta = [1, 0.5]; S += delta k^T -> [[2, 0], [0.5, 2]];
  // q = [0.5, 0.5]: S q = [1, 1.25], times out_scale 0.5: o = [0.5, 0.625]. All exact.
  const std::vector<float> q{0.5f, 0.5f}, k{1, 0}, v{3, 1}, g{0.0f}, beta{0.5f};
  for (int tier = 0; tier < 3; ++tier) {
    std::vector<float> state{1, 0, 0, 2}, o(2);
    kTiers[tier](with({1, 1, 1, 2, 2}, 1, 0, 0.5f), q, k, v, g, beta, state, o);
    EXPECT_EQ(state, (std::vector<float>{2, 0, 0.5f, 2})) << "tier " << tier;
    EXPECT_EQ(o, (std::vector<float>{0.5f, 0.625f})) << "tier " << tier;
  }
  // The log of a hard reset (factor 0): exp(kDeltaNetLogZero) is 0 in f32 and f64, so the state
  // is k delta alone: delta = v beta = [1.5, 0.5] -> S = [[1.5, 0], [0.5, 0]], o = [0.75, 0.25].
  const std::vector<float> zero{kDeltaNetLogZero};
  for (int tier = 0; tier < 3; ++tier) {
    std::vector<float> state{1, 0, 0, 2}, o(2);
    kTiers[tier](with({1, 1, 1, 2, 2}, 1, 0, 1.0f), q, k, v, zero, beta, state, o);
    EXPECT_EQ(state, (std::vector<float>{1.5f, 0, 0.5f, 0})) << "tier " << tier;
    EXPECT_EQ(o, (std::vector<float>{0.75f, 0.25f})) << "tier " << tier;
  }
}

TEST(delta_net_conventions, HeadGroupModReadsHeadHModHk) {
  // Hk = 2, Hv = 6: head_group 1 has v-head h = j + 2 i read q/k head j; head_group 0 has v-head
  // 3 j + i read it. With the v-side tensors (v, g, beta, state, o) of v-head j + 2 i moved to
  // 3 j + i, the two calls compute the same thing, bit for bit, in every tier.
  const DeltaNetParams p0{3, 2, 6, 9, 7};
  const DeltaNetParams p1 = with(p0, 0, 1, 1.0f);
  const DeltaNetInputs in = delta_net_inputs(p0, 41, true);
  const int64_t T = p0.tokens, Hv = p0.v_heads, dk = p0.key_dim, dv = p0.value_dim;
  auto moved = [&](int64_t h1) { return 3 * (h1 % 2) + h1 / 2; };  // group-1 head -> group-0 head
  std::vector<float> v0(in.v.size()), g0(in.g.size()), b0(in.beta.size()), s0(in.state0.size());
  for (int64_t h = 0; h < Hv; ++h) {
    const int64_t h0 = moved(h);
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t i = 0; i < dv; ++i) v0[(t * Hv + h0) * dv + i] = in.v[(t * Hv + h) * dv + i];
      g0[t * Hv + h0] = in.g[t * Hv + h], b0[t * Hv + h0] = in.beta[t * Hv + h];
    }
    for (int64_t i = 0; i < dv * dk; ++i) s0[h0 * dv * dk + i] = in.state0[h * dv * dk + i];
  }
  for (int tier = 0; tier < 3; ++tier) {
    std::vector<float> S1 = in.state0, o1(in.v.size()), S0 = s0, o0(in.v.size());
    kTiers[tier](p1, in.q, in.k, in.v, in.g, in.beta, S1, o1);
    kTiers[tier](p0, in.q, in.k, v0, g0, b0, S0, o0);
    for (int64_t h = 0; h < Hv; ++h) {
      const int64_t h0 = moved(h);
      EXPECT_EQ(0, std::memcmp(S1.data() + h * dv * dk, S0.data() + h0 * dv * dk, size_t(dv * dk) * 4))
          << "tier " << tier << " head " << h;
      for (int64_t t = 0; t < T; ++t)
        EXPECT_EQ(0, std::memcmp(o1.data() + (t * Hv + h) * dv, o0.data() + (t * Hv + h0) * dv, size_t(dv) * 4))
            << "tier " << tier << " head " << h << " t " << t;
    }
  }
}

TEST(delta_net_conventions, OutScaleScalesOutputOnly) {
  // The state never sees out_scale. The f32 tiers multiply their f32 sum once, so o equals the
  // unscaled o times the scale in f32, bit for bit; the truth rounds its f64 product once, so it
  // is within one rounding of each side: 2u |o| (or bit-exact for a power of two).
  const DeltaNetParams p{4, 2, 4, 33, 17};
  const DeltaNetInputs in = delta_net_inputs(p, 43, false);
  for (float scale : {0.25f, 1.0f / std::sqrt(17.0f), -3.0f}) {
    for (int tier = 0; tier < 3; ++tier) {
      std::vector<float> Su = in.state0, ou(in.v.size()), Ss = in.state0, os(in.v.size());
      kTiers[tier](p, in.q, in.k, in.v, in.g, in.beta, Su, ou);
      kTiers[tier](with(p, 0, 0, scale), in.q, in.k, in.v, in.g, in.beta, Ss, os);
      EXPECT_TRUE(same_bits(Su, Ss)) << "tier " << tier;
      for (size_t i = 0; i < ou.size(); ++i) {
        const float want = ou[i] * scale;
        if (tier > 0 || scale == 0.25f)
          EXPECT_EQ(os[i], want) << "tier " << tier << " scale " << scale << " i " << i;
        else
          EXPECT_NEAR(os[i], want, 2 * kU32 * std::fabs(double(want)) + 1e-38) << "scale " << scale << " i " << i;
      }
    }
  }
}

// A params struct with its inputs.
struct Form {
  DeltaNetParams p;
  const DeltaNetInputs& in;
};

// One isolated token per tier from the truth's state, as the three-way check runs it: the truth
// of `truth`, the bound of `bound` (delta_net_token_bound) at the truth's states, the tier run on
// `tier`. Whether every o and state element is within the bound.
bool tier_within_bound(const Form& truth, const Form& bound, const Form& tier, int tier_index,
                       const PrecisionModel& m) {
  const DeltaNetParams& p = truth.p;
  const int64_t T = p.tokens, Hk = p.k_heads, Hv = p.v_heads, dk = p.key_dim, dv = p.value_dim;
  DeltaNetParams truth1 = truth.p, tier1 = tier.p;
  truth1.tokens = tier1.tokens = 1;
  std::vector<float> R = truth.in.state0;
  bool ok = true;
  auto sub = [](const std::vector<float>& v, int64_t off, int64_t n) {
    return std::span<const float>(v).subspan(size_t(off), size_t(n));
  };
  auto run = [&](Fn f, const DeltaNetParams& p1, const DeltaNetInputs& in, int64_t t, std::vector<float>& S,
                 std::vector<float>& o) {
    f(p1, sub(in.q, t * Hk * dk, Hk * dk), sub(in.k, t * Hk * dk, Hk * dk), sub(in.v, t * Hv * dv, Hv * dv),
      sub(in.g, t * Hv, Hv), sub(in.beta, t * Hv, Hv), S, o);
  };
  for (int64_t t = 0; t < T; ++t) {
    std::vector<float> S = R, o(size_t(Hv * dv)), R1 = R, ot(o.size());
    std::vector<double> ob(o.size());
    run(kTiers[tier_index], tier1, tier.in, t, S, o);
    run(kTiers[0], truth1, truth.in, t, R1, ot);
    DeltaNetErrorTracker tr(p);  // zero: this token alone
    delta_net_token_bound(bound.p, bound.in, t, R, R1, ot, tr, ob.data(), m);
    for (size_t i = 0; i < o.size(); ++i) ok = ok && std::fabs(double(o[i]) - ot[i]) <= ob[i];
    for (size_t i = 0; i < S.size(); ++i) ok = ok && std::fabs(double(S[i]) - R1[i]) <= tr.b[i];
    R.swap(R1);
  }
  return ok;
}

TEST(delta_net_conventions, LogDecayEqualsFactorFormWithinTheBound) {
  // The f32 tiers given log(g) agree with the truth given g itself, within the log form's bound.
  // Its exp budget is glibc's 2u plus u |x|: the f32 log input is log(g) within u |log g|, which
  // moves exp(x) by that much relative.
  PrecisionModel m = cpu_f32_model();
  m.exp_rel = [](double x) { return 2 * kU32 + kU32 * std::fabs(x); };
  for (bool special : {false, true}) {
    const DeltaNetParams p0{8, 2, 4, 33, 19};
    const DeltaNetParams p1 = with(p0, 1, 0, 1.0f);
    const DeltaNetInputs in0 = delta_net_inputs(p0, 47, special), in1 = delta_net_inputs(p1, 47, special);
    for (size_t i = 0; i < in0.g.size(); ++i)  // the same draws, as logs
      ASSERT_EQ(in1.g[i], in0.g[i] == 0 ? kDeltaNetLogZero : float(std::log(double(in0.g[i])))) << i;
    const Form factor{p0, in0}, log{p1, in1};
    for (int tier = 1; tier < 3; ++tier) {
      EXPECT_TRUE(tier_within_bound(log, log, log, tier, m)) << "tier " << tier << " special " << special;
      EXPECT_TRUE(tier_within_bound(factor, log, log, tier, m)) << "tier " << tier << " special " << special;
    }
  }
}

TEST(delta_net_conventions, WrongConventionIsCaughtByTheBound) {
  // The negative side: a tier run in another form than the truth's fails the bound (the log
  // decay read as a factor, the head grouping swapped, the output scale left out).
  const DeltaNetParams p{4, 2, 4, 33, 19};
  const DeltaNetParams log_p = with(p, 1, 0, 1.0f), mod_p = with(p, 0, 1, 1.0f), sc_p = with(p, 0, 0, 0.125f);
  const DeltaNetInputs in = delta_net_inputs(p, 53, false), log_in = delta_net_inputs(log_p, 53, false);
  const Form log{log_p, log_in}, log_as_factor{p, log_in}, mod{mod_p, in}, plain{p, in}, scaled{sc_p, in};
  const PrecisionModel m = cpu_f32_model();
  for (int tier = 1; tier < 3; ++tier) {
    EXPECT_TRUE(tier_within_bound(log, log, log, tier, m)) << tier;
    EXPECT_FALSE(tier_within_bound(log, log, log_as_factor, tier, m)) << tier;
    EXPECT_TRUE(tier_within_bound(mod, mod, mod, tier, m)) << tier;
    EXPECT_FALSE(tier_within_bound(mod, mod, plain, tier, m)) << tier;
    EXPECT_TRUE(tier_within_bound(scaled, scaled, scaled, tier, m)) << tier;
    EXPECT_FALSE(tier_within_bound(scaled, scaled, plain, tier, m)) << tier;
  }
}

TEST(delta_net_conventions, ThreeWayAgreementWithEachConvention) {
  for (const DeltaNetParams& conv : {with({}, 1, 0, 1.0f), with({}, 0, 1, 1.0f), with({}, 0, 0, 0.0883883f),
                                     with({}, 1, 1, 0.0883883f)}) {
    const std::vector<CheckResult> rs = delta_net_check_conventions(1234, CheckScope::Remainders, conv);
    test::expect_all_pass(rs);
    if (conv.decay_log) {
      EXPECT_NE(rs[0].params.find("decay_log=1"), std::string::npos) << rs[0].params;
    }
  }
}

TEST(delta_net_conventions, ParamsTextNamesOnlyConventionsSet) {
  DeltaNetParams p{2, 1, 2, 4, 4};
  EXPECT_EQ(params_to_string(p), "tokens=2 k_heads=1 v_heads=2 key_dim=4 value_dim=4");
  p.decay_log = 1, p.out_scale = 0.5f;
  EXPECT_EQ(params_to_string(p), "tokens=2 k_heads=1 v_heads=2 key_dim=4 value_dim=4 decay_log=1 out_scale=0.5");
}

TEST(delta_net_conventions, BadConventionValues) {
  const std::vector<float> q(4), k(4), v(4), g(1), beta(1);
  std::vector<float> state(16), o(4);
  auto err = [&](const DeltaNetParams& p) {
    return test::error_of([&] { delta_net_ref<float>(p, q, k, v, g, beta, state, o); });
  };
  const DeltaNetParams p{1, 1, 1, 4, 4};
  EXPECT_EQ(err(with(p, 2, 0, 1.0f)), "delta_net: decay_log=2, expected 0 or 1");
  EXPECT_EQ(err(with(p, 0, -1, 1.0f)), "delta_net: head_group=-1, expected 0 or 1");
  EXPECT_EQ(err(with(p, 0, 0, std::numeric_limits<float>::infinity())),
            "delta_net: out_scale=inf, expected a finite value");
}

}  // namespace
}  // namespace moe
