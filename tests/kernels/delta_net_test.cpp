#include <cmath>
#include <cstring>
#include <limits>

#include "check/checks.h"
#include "core/rng.h"
#include "ops/delta_net.h"
#include "kernels/delta_net_tiers.h"
#include "test_util.h"

namespace moe {
namespace {

using Fn = test::DeltaNetFn;
const auto& kTiers = test::kDeltaNetTiers;
using test::same_bits;

// Realistic random inputs for a shape (unit-norm k, |q| = 1/sqrt(dk), gates in their ranges).
struct Data {
  std::vector<float> q, k, v, g, beta, state;
};
Data make(const DeltaNetParams& p, uint64_t seed) {
  Rng rng(seed);
  Data d;
  const int64_t T = p.tokens, dk = p.key_dim;
  d.q = rng.fork(1).normal_vec(T * p.k_heads * dk, 1.0 / dk);
  d.k = rng.fork(2).normal_vec(T * p.k_heads * dk, 1.0 / std::sqrt(double(dk)));
  d.v = rng.fork(3).normal_vec(T * p.v_heads * p.value_dim, 1.0);
  d.g = rng.fork(4).uniform_vec(T * p.v_heads, 0.9f, 1.0f);
  d.beta = rng.fork(5).uniform_vec(T * p.v_heads, 0.3f, 0.7f);
  d.state = rng.fork(6).uniform_vec(p.v_heads * p.value_dim * dk, -0.5f, 0.5f);
  return d;
}

TEST(delta_net, HandComputed) {
  // dk = dv = 2. S = [[1, 0], [0, 2]] (rows vi), g = 0.5 -> [[0.5, 0], [0, 1]]; k = [1, 0]:
  // kv_mem = [0.5, 0]; v = [3, 1], beta = 0.5: delta = [1.25, 0.5];
  // S += delta k^T -> [[1.75, 0], [0.5, 1]]; q = [0.5, 0.5]: o = [0.875, 0.75]. All exact.
  const std::vector<float> q{0.5f, 0.5f}, k{1, 0}, v{3, 1}, g{0.5f}, beta{0.5f};
  for (int tier = 0; tier < 3; ++tier) {
    std::vector<float> state{1, 0, 0, 2}, o(2);
    kTiers[tier]({1, 1, 1, 2, 2}, q, k, v, g, beta, state, o);
    EXPECT_EQ(state, (std::vector<float>{1.75f, 0, 0.5f, 1})) << "tier " << tier;
    EXPECT_EQ(o, (std::vector<float>{0.875f, 0.75f})) << "tier " << tier;
  }
}

TEST(delta_net, F32TierMatchesEngineOrderBitExact) {
  // CPU-R: decay every element, then per row kv_mem = fma(S, k, kv_mem), delta = (v - kv) * beta,
  // S = fma(k, delta, S); then per row o = fma(S, q, o). ki ascending.
  const DeltaNetParams p{2, 2, 4, 33, 31};
  Data d = make(p, 31);
  std::vector<float> S = d.state, o(p.tokens * p.v_heads * p.value_dim);
  delta_net_ref<float>(p, d.q, d.k, d.v, d.g, d.beta, S, o);
  const int64_t dk = p.key_dim, dv = p.value_dim, Hv = p.v_heads, Hk = p.k_heads;
  std::vector<float> E = d.state;
  for (int64_t t = 0; t < p.tokens; ++t) {
    for (int64_t h = 0; h < Hv; ++h) {
      const float* qh = d.q.data() + (t * Hk + h / 2) * dk;
      const float* kh = d.k.data() + (t * Hk + h / 2) * dk;
      float* Sh = E.data() + h * dv * dk;
      for (int64_t i = 0; i < dv * dk; ++i) Sh[i] = d.g[t * Hv + h] * Sh[i];
      for (int64_t vi = 0; vi < dv; ++vi) {
        float kv = 0;
        for (int64_t ki = 0; ki < dk; ++ki) kv = std::fma(Sh[vi * dk + ki], kh[ki], kv);
        const float diff = d.v[(t * Hv + h) * dv + vi] - kv;
        const float delta = diff * d.beta[t * Hv + h];
        for (int64_t ki = 0; ki < dk; ++ki) Sh[vi * dk + ki] = std::fma(kh[ki], delta, Sh[vi * dk + ki]);
      }
      for (int64_t vi = 0; vi < dv; ++vi) {
        float acc = 0;
        for (int64_t ki = 0; ki < dk; ++ki) acc = std::fma(Sh[vi * dk + ki], qh[ki], acc);
        EXPECT_EQ(o[(t * Hv + h) * dv + vi], acc) << "t " << t << " h " << h << " vi " << vi;
      }
    }
  }
  EXPECT_TRUE(same_bits(S, E));
}

TEST(delta_net, HeadMappingIsRepeatInterleave) {
  // Hk = 2, Hv = 4: v-heads 0, 1 read k-head 0 and v-heads 2, 3 read k-head 1. Each v-head of
  // the grouped call equals a one-head call on its own slices, bit-for-bit.
  const DeltaNetParams p{3, 2, 4, 9, 7};
  const Data d = make(p, 32);
  const int64_t T = p.tokens, dk = p.key_dim, dv = p.value_dim;
  for (int tier = 0; tier < 3; ++tier) {
    std::vector<float> S = d.state, o(T * 4 * dv);
    kTiers[tier](p, d.q, d.k, d.v, d.g, d.beta, S, o);
    for (int64_t h = 0; h < 4; ++h) {
      std::vector<float> q1, k1, v1, g1, b1, o1(T * dv);
      for (int64_t t = 0; t < T; ++t) {
        q1.insert(q1.end(), d.q.begin() + (t * 2 + h / 2) * dk, d.q.begin() + (t * 2 + h / 2 + 1) * dk);
        k1.insert(k1.end(), d.k.begin() + (t * 2 + h / 2) * dk, d.k.begin() + (t * 2 + h / 2 + 1) * dk);
        v1.insert(v1.end(), d.v.begin() + (t * 4 + h) * dv, d.v.begin() + (t * 4 + h + 1) * dv);
        g1.push_back(d.g[t * 4 + h]), b1.push_back(d.beta[t * 4 + h]);
      }
      std::vector<float> S1(d.state.begin() + h * dv * dk, d.state.begin() + (h + 1) * dv * dk);
      kTiers[tier]({T, 1, 1, dk, dv}, q1, k1, v1, g1, b1, S1, o1);
      EXPECT_TRUE(same_bits(S1, std::vector<float>(S.begin() + h * dv * dk, S.begin() + (h + 1) * dv * dk)))
          << "tier " << tier << " head " << h;
      for (int64_t t = 0; t < T; ++t)
        for (int64_t vi = 0; vi < dv; ++vi)
          EXPECT_EQ(o1[t * dv + vi], o[(t * 4 + h) * dv + vi]) << "tier " << tier << " head " << h;
    }
  }
}

TEST(delta_net, IdentityGatesLeaveStateUnchanged) {
  // beta = 0 with g = 1: S = 1*S + k*0 = S bit-for-bit; o = S q.
  const DeltaNetParams p{4, 2, 4, 33, 31};
  Data d = make(p, 33);
  std::fill(d.g.begin(), d.g.end(), 1.0f);
  std::fill(d.beta.begin(), d.beta.end(), 0.0f);
  for (int tier = 0; tier < 3; ++tier) {
    std::vector<float> S = d.state, o(p.tokens * p.v_heads * p.value_dim);
    kTiers[tier](p, d.q, d.k, d.v, d.g, d.beta, S, o);
    EXPECT_TRUE(same_bits(S, d.state)) << "tier " << tier;
  }
}

TEST(delta_net, ZeroDecayWipesState) {
  // g = 0 zeroes the old state before the update: two different incoming states give the same
  // bits as a zero state, and then S = k delta^T with delta = v beta.
  const DeltaNetParams p{1, 2, 4, 33, 31};
  Data d = make(p, 34);
  std::fill(d.g.begin(), d.g.end(), 0.0f);
  const int64_t n_o = p.v_heads * p.value_dim;
  for (int tier = 0; tier < 3; ++tier) {
    std::vector<float> Sa = d.state, Sb(d.state.size(), 0.0f), Sc(d.state.size(), 123.0f);
    std::vector<float> oa(n_o), ob(n_o), oc(n_o);
    kTiers[tier](p, d.q, d.k, d.v, d.g, d.beta, Sa, oa);
    kTiers[tier](p, d.q, d.k, d.v, d.g, d.beta, Sb, ob);
    kTiers[tier](p, d.q, d.k, d.v, d.g, d.beta, Sc, oc);
    EXPECT_EQ(Sa, Sb) << "tier " << tier;
    EXPECT_EQ(Sc, Sb) << "tier " << tier;
    EXPECT_EQ(oa, ob) << "tier " << tier;
    EXPECT_EQ(oc, ob) << "tier " << tier;
    // S[h][vi][ki] = k[ki] * (v[vi] * beta) (one rounding each in f32: compare loosely).
    for (int64_t h = 0; h < p.v_heads; ++h)
      for (int64_t vi = 0; vi < p.value_dim; ++vi)
        for (int64_t ki = 0; ki < p.key_dim; ++ki) {
          const double want = double(d.k[(h / 2) * p.key_dim + ki]) * d.v[h * p.value_dim + vi] * d.beta[h];
          EXPECT_NEAR(Sb[(h * p.value_dim + vi) * p.key_dim + ki], want, 1e-6 * std::fabs(want) + 1e-30);
        }
  }
}

TEST(delta_net, TTokensEqualSingleStepsBitExact) {
  // Small and threaded (T*Hv*dv*dk >= 2^16 turns on OpenMP in the fast tier) shapes.
  for (const DeltaNetParams& p : {DeltaNetParams{5, 2, 4, 33, 31}, DeltaNetParams{4, 2, 8, 64, 64}}) {
    const Data d = make(p, 35);
    const int64_t Hk = p.k_heads, Hv = p.v_heads, dk = p.key_dim, dv = p.value_dim;
    for (int tier = 0; tier < 3; ++tier) {
      std::vector<float> Sa = d.state, oa(p.tokens * Hv * dv);
      kTiers[tier](p, d.q, d.k, d.v, d.g, d.beta, Sa, oa);
      std::vector<float> Sb = d.state, ob(oa.size());
      for (int64_t t = 0; t < p.tokens; ++t) {
        kTiers[tier]({1, Hk, Hv, dk, dv}, std::span<const float>(d.q).subspan(t * Hk * dk, Hk * dk),
                     std::span<const float>(d.k).subspan(t * Hk * dk, Hk * dk),
                     std::span<const float>(d.v).subspan(t * Hv * dv, Hv * dv),
                     std::span<const float>(d.g).subspan(t * Hv, Hv), std::span<const float>(d.beta).subspan(t * Hv, Hv),
                     Sb, std::span<float>(ob).subspan(t * Hv * dv, Hv * dv));
      }
      EXPECT_TRUE(same_bits(Sa, Sb)) << "tier " << tier << " dk " << dk;
      EXPECT_TRUE(same_bits(oa, ob)) << "tier " << tier << " dk " << dk;
      // o written over v gives the same bits.
      std::vector<float> Sc = d.state, vo = d.v;
      kTiers[tier](p, d.q, d.k, vo, d.g, d.beta, Sc, vo);
      EXPECT_TRUE(same_bits(vo, oa)) << "tier " << tier << " dk " << dk;
      EXPECT_TRUE(same_bits(Sc, Sa)) << "tier " << tier << " dk " << dk;
    }
  }
}

TEST(delta_net, NanInVStaysInItsHeadRow) {
  // NaN in v[t=0][h=1][vi=2]: delta of that row is NaN, so state row (1, 2) and o[t][1][2] for
  // every later token are NaN (the decay keeps it); every other head and row stays finite.
  const DeltaNetParams p{3, 2, 4, 8, 5};
  Data d = make(p, 36);
  d.v[1 * 5 + 2] = std::numeric_limits<float>::quiet_NaN();
  for (int tier = 0; tier < 3; ++tier) {
    std::vector<float> S = d.state, o(3 * 4 * 5);
    kTiers[tier](p, d.q, d.k, d.v, d.g, d.beta, S, o);
    for (int64_t t = 0; t < 3; ++t)
      for (int64_t h = 0; h < 4; ++h)
        for (int64_t vi = 0; vi < 5; ++vi)
          EXPECT_EQ(std::isnan(o[(t * 4 + h) * 5 + vi]), h == 1 && vi == 2)
              << "tier " << tier << " t " << t << " h " << h << " vi " << vi;
    for (int64_t i = 0; i < int64_t(S.size()); ++i)
      EXPECT_EQ(std::isnan(S[i]), i / 8 == 1 * 5 + 2) << "tier " << tier << " state " << i;
  }
}

TEST(delta_net, BadArguments) {
  const DeltaNetParams p{2, 2, 4, 3, 5};
  std::vector<float> q(12), k(12), v(40), g(8), beta(8), S(60), o(40);
  test::expect_error([&] { delta_net_ref<double>({2, 3, 4, 3, 5}, q, k, v, g, beta, S, o); },
                     "delta_net: v_heads=4 is not a multiple of k_heads=3");
  std::vector<float> k_short(11), S_short(59);
  test::expect_error([&] { delta_net_fast(p, q, k_short, v, g, beta, S, o); }, "delta_net: k has 11 elements, expected 12");
  test::expect_error([&] { delta_net_ref<float>(p, q, k, v, g, beta, S_short, o); },
                     "delta_net: state has 59 elements, expected 60");
  test::expect_error([&] { delta_net_ref<float>({2, 2, 4, 0, 5}, q, k, v, g, beta, S, o); }, "key_dim=0");
  std::vector<float> big(100);
  test::expect_error([&] { delta_net_fast(p, q, k, v, g, beta, std::span<float>(big).subspan(0, 60),
                                          std::span<float>(big).subspan(50, 40)); },
                     "delta_net: o overlaps state");
  std::vector<float> qo(52);
  test::expect_error([&] { delta_net_ref<double>(p, std::span<const float>(qo).subspan(0, 12), k, v, g, beta, S,
                                                 std::span<float>(qo).subspan(10, 40)); },
                     "delta_net: o overlaps q");
}

TEST(delta_net, ThreeWayAgreement) { test::expect_all_pass(delta_net_check(1234, CheckScope::All)); }

}  // namespace
}  // namespace moe
