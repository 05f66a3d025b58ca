#include <cmath>
#include <cstring>
#include <limits>

#include "check/checks.h"
#include "core/check_util.h"
#include "core/params.h"
#include "core/rng.h"
#include "ops/attention.h"
#include "test_util.h"

namespace moe {
namespace {

using Tier = void (*)(const AttentionParams&, std::span<const float>, std::span<const float>, std::span<const float>,
                      std::span<const float>, std::span<float>, std::span<float>, std::span<float>);
const Tier kTiers[] = {&attention_ref<double>, &attention_ref<float>, &attention_fast};

// Inputs of one call. Cache rows at and past `past` start as NaN: a tier that read a row it
// has not written (beyond its causal window) would turn outputs into NaN.
struct Case {
  AttentionParams p;
  std::vector<float> q, gate, k, v, k_cache, v_cache;
  std::vector<float> o;
  int64_t row() const { return p.kv_heads * p.head_dim; }
  void run(int tier) { kTiers[tier](p, q, gate, k, v, k_cache, v_cache, o); }
};

Case random_case(const AttentionParams& p, uint64_t seed) {
  Rng rng(seed);
  Case c;
  c.p = p;
  const int64_t n = p.tokens * p.q_heads * p.head_dim, row = p.kv_heads * p.head_dim;
  c.q = rng.fork(1).normal_vec(n, 1.5);
  c.gate = rng.fork(2).normal_vec(n, 2.0);
  c.k = rng.fork(3).normal_vec(p.tokens * row, 1.0);
  c.v = rng.fork(4).normal_vec(p.tokens * row, 1.0);
  c.k_cache = rng.fork(5).normal_vec(p.capacity * row, 1.0);
  c.v_cache = rng.fork(6).normal_vec(p.capacity * row, 1.0);
  for (int64_t i = p.past * row; i < p.capacity * row; ++i) c.k_cache[i] = c.v_cache[i] = test::kNan;
  c.o.assign(n, 0.0f);
  return c;
}

// Bitwise equality that also treats NaN == NaN (the caches hold NaN sentinels).
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(attention, HandComputed) {
  // One head, D = 2, scale 1. Cached row 0: K = [0, 0], V = [4, 8]; the new token: k = [ln 3, 5],
  // v = [0, -4], q = [1, 0]. Scores [0, ln 3] -> P = [1/4, 3/4]; o = [1, 2 - 3] = [1, -1];
  // gate 0 -> sigmoid 1/2 -> o = [0.5, -0.5].
  for (int tier = 0; tier < 3; ++tier) {
    Case c;
    c.p = {1, 1, 1, 2, 1, 2, 1.0f};
    c.q = {1, 0}, c.gate = {0, 0}, c.k = {float(std::log(3.0)), 5}, c.v = {0, -4};
    c.k_cache = {0, 0, test::kNan, test::kNan}, c.v_cache = {4, 8, test::kNan, test::kNan}, c.o = {0, 0};
    c.run(tier);
    EXPECT_NEAR(c.o[0], 0.5f, 1e-6) << test::kTierNames[tier];
    EXPECT_NEAR(c.o[1], -0.5f, 1e-6) << test::kTierNames[tier];
    EXPECT_EQ(c.k_cache[2], c.k[0]);
    EXPECT_EQ(c.v_cache[3], -4.0f);
  }
}

// CPU-C's attention loop for one call, written out as the engine has it
// (docs/ops/attention.md "Full-attention layer" steps 6-8, the softmax of
// docs/ops/README.md "Scalar helpers"). No contraction: the engines' only fused operation is the
// dot's fma.
__attribute__((optimize("fp-contract=off"))) std::vector<float> engine_attention(const Case& c) {
  const AttentionParams& p = c.p;
  const int64_t H = p.q_heads, D = p.head_dim, row = c.row(), heads_per_kv = H / p.kv_heads;
  std::vector<float> kc = c.k_cache, vc = c.v_cache, out(c.o.size());
  for (int64_t i = 0; i < p.tokens * row; ++i) kc[p.past * row + i] = c.k[i], vc[p.past * row + i] = c.v[i];
  const float scale = 1.0f / std::sqrt(float(D));
  for (int64_t t = 0; t < p.tokens; ++t) {
    const int64_t len = p.past + t + 1;
    for (int64_t h = 0; h < H; ++h) {
      const float* qh = c.q.data() + (t * H + h) * D;
      const int64_t kvh = h / heads_per_kv;
      std::vector<float> scores(len), oh(D, 0.0f);
      for (int64_t pos = 0; pos < len; ++pos) {
        float dot = 0.0f;
        for (int64_t d = 0; d < D; ++d) dot = std::fma(qh[d], kc[pos * row + kvh * D + d], dot);
        scores[pos] = dot * scale;
      }
      float mx = scores[0];
      for (int64_t i = 1; i < len; ++i)
        if (scores[i] > mx) mx = scores[i];
      float sum = 0.0f;
      for (int64_t i = 0; i < len; ++i) {
        scores[i] = std::exp(scores[i] - mx);
        sum += scores[i];
      }
      const float inv = 1.0f / sum;
      for (int64_t i = 0; i < len; ++i) scores[i] *= inv;
      for (int64_t pos = 0; pos < len; ++pos)
        for (int64_t d = 0; d < D; ++d) {
          const float pv = scores[pos] * vc[pos * row + kvh * D + d];
          oh[d] = oh[d] + pv;
        }
      for (int64_t d = 0; d < D; ++d) {
        const float g = c.gate[(t * H + h) * D + d];
        out[(t * H + h) * D + d] = oh[d] * (1.0f / (1.0f + std::exp(-g)));
      }
    }
  }
  return out;
}

TEST(attention, F32TierMatchesEngineOrderBitExact) {
  const AttentionParams shapes[] = {{1, 32, 2, 256, 40, 41, 0.0f}, {3, 6, 2, 33, 70, 75, 0.0f}, {2, 3, 3, 31, 0, 2, 0.0f}};
  for (const AttentionParams& p : shapes) {
    Case c = random_case(p, 10);
    const std::vector<float> want = engine_attention(c);
    c.run(1);
    EXPECT_TRUE(same_bits(c.o, want)) << params_to_string(p);
    int64_t differ = 0;
    for (size_t i = 0; i < want.size(); ++i) differ += c.o[i] != want[i];
    EXPECT_EQ(differ, 0);
  }
}

TEST(attention, KvLengthOneGivesGatedValue) {
  // kv_len 1: softmax = [1] exactly, so o = v * sigmoid(gate) bit-exactly in every tier, and
  // query head h reads kv head h / (H / Hkv) (heads 0-2 -> kv 0, 3-5 -> kv 1).
  const AttentionParams p{1, 6, 2, 5, 0, 1, 0.0f};
  for (int tier = 0; tier < 3; ++tier) {
    Case c = random_case(p, 11);
    c.run(tier);
    for (int64_t h = 0; h < 6; ++h) {
      for (int64_t d = 0; d < 5; ++d) {
        const float v = c.v[(h / 3) * 5 + d], g = c.gate[h * 5 + d];
        const float want = tier == 0 ? float(double(v) * (1.0 / (1.0 + std::exp(-double(g)))))
                                     : v * (1.0f / (1.0f + std::exp(-g)));
        EXPECT_EQ(c.o[h * 5 + d], want) << test::kTierNames[tier] << " h " << h << " d " << d;
      }
    }
  }
}

TEST(attention, CacheRowsAreExactCopies) {
  // Rows [past, past + T) become k and v bit for bit; every other row is untouched.
  const AttentionParams p{3, 4, 2, 7, 5, 11, 0.0f};
  for (int tier = 0; tier < 3; ++tier) {
    Case c = random_case(p, 12);
    std::vector<float> kc = c.k_cache, vc = c.v_cache;
    std::copy(c.k.begin(), c.k.end(), kc.begin() + p.past * c.row());
    std::copy(c.v.begin(), c.v.end(), vc.begin() + p.past * c.row());
    c.run(tier);
    EXPECT_TRUE(same_bits(c.k_cache, kc)) << test::kTierNames[tier];
    EXPECT_TRUE(same_bits(c.v_cache, vc)) << test::kTierNames[tier];
  }
}

TEST(attention, ZeroTokensDoesNothing) {
  const AttentionParams p{0, 4, 2, 8, 3, 3, 0.0f};
  for (int tier = 0; tier < 3; ++tier) {
    Case c = random_case(p, 13);
    const std::vector<float> kc = c.k_cache, vc = c.v_cache;
    c.run(tier);
    EXPECT_TRUE(same_bits(c.k_cache, kc) && same_bits(c.v_cache, vc)) << test::kTierNames[tier];
  }
}

TEST(attention, PrefillEqualsOneTokenCalls) {
  // Token t of a prefill sees rows [0, past + t + 1), exactly what a one-token call at
  // past + t sees, so the results agree bit for bit in each tier. The shapes cover G = 2, 1, 8
  // and a prefill across the fast tier's chunk boundary. Unwritten rows are NaN in both runs.
  const AttentionParams shapes[] = {{8, 4, 2, 64, kAttentionFastChunk - 4, kAttentionFastChunk + 6, 0.0f},
                                    {5, 3, 3, 33, 5, 10, 0.0f},
                                    {4, 16, 2, 256, 30, 34, 0.0f}};
  for (const AttentionParams& p : shapes) {
    for (int tier = 0; tier < 3; ++tier) {
      Case all = random_case(p, 14);
      Case one = all;
      all.run(tier);
      const int64_t qn = p.q_heads * p.head_dim, kn = one.row();
      for (int64_t t = 0; t < p.tokens; ++t) {
        AttentionParams pt = p;
        pt.tokens = 1, pt.past = p.past + t;
        const std::vector<float> q(one.q.begin() + t * qn, one.q.begin() + (t + 1) * qn);
        const std::vector<float> gate(one.gate.begin() + t * qn, one.gate.begin() + (t + 1) * qn);
        const std::vector<float> k(one.k.begin() + t * kn, one.k.begin() + (t + 1) * kn);
        const std::vector<float> v(one.v.begin() + t * kn, one.v.begin() + (t + 1) * kn);
        std::vector<float> o(qn);
        kTiers[tier](pt, q, gate, k, v, one.k_cache, one.v_cache, o);
        std::copy(o.begin(), o.end(), one.o.begin() + t * qn);
      }
      EXPECT_TRUE(same_bits(all.o, one.o)) << test::kTierNames[tier] << " " << params_to_string(p);
      EXPECT_TRUE(same_bits(all.k_cache, one.k_cache) && same_bits(all.v_cache, one.v_cache)) << test::kTierNames[tier];
      for (float x : all.o) ASSERT_FALSE(std::isnan(x)) << test::kTierNames[tier] << " read an unwritten row";
    }
  }
}

TEST(attention, DefaultScaleIsInverseSqrtHeadDim) {
  // 1/sqrt(64) = 0.125 exactly, so scale 0 and scale 0.125 must agree bit for bit.
  for (int tier = 0; tier < 3; ++tier) {
    Case a = random_case({2, 4, 2, 64, 9, 11, 0.0f}, 15), b = random_case({2, 4, 2, 64, 9, 11, 0.125f}, 15);
    a.run(tier), b.run(tier);
    EXPECT_TRUE(same_bits(a.o, b.o)) << test::kTierNames[tier];
  }
}

TEST(attention, EqualScoresAverageValues) {
  // q = 0 makes every score 0, so P = 1/len and o = mean_p V[p] (gate 100: sigmoid rounds to 1
  // in f32 and f64). len = 32 with small integer V: every weight (1/32), product and partial
  // sum is exact, so each tier returns the exact mean. len = 300: within the summation bound.
  for (int64_t len : {32, 300}) {
    const AttentionParams p{1, 2, 1, 16, len - 1, len, 0.0f};
    for (int tier = 0; tier < 3; ++tier) {
      Case c = random_case(p, 16);
      Rng rng(17);
      for (float& x : c.v_cache) x = float(rng.below(17) - 8);
      for (float& x : c.v) x = float(rng.below(17) - 8);
      std::fill(c.q.begin(), c.q.end(), 0.0f);
      std::fill(c.gate.begin(), c.gate.end(), 100.0f);
      c.run(tier);
      for (int64_t d = 0; d < 16; ++d) {
        double sum = 0, abs_sum = 0;
        for (int64_t r = 0; r < len; ++r) {
          const double x = r < len - 1 ? c.v_cache[r * 16 + d] : c.v[d];
          sum += x, abs_sum += std::fabs(x);
        }
        const double mean = sum / double(len);
        // Weights 1/len within 2u (exp(0) = 1 is exact; the sum of len ones is exact; 1/len and
        // the product round once each), then a sum of len products: gamma_len sum |P v|, the
        // gate multiply and the final rounding 2u.
        const double tol = len == 32 ? 0.0 : (gamma_n(double(len)) + 5 * kU32) * abs_sum / double(len);
        for (int64_t h = 0; h < 2; ++h)
          EXPECT_NEAR(c.o[h * 16 + d], mean, tol) << test::kTierNames[tier] << " len " << len << " d " << d;
      }
    }
  }
}

TEST(attention, NanInCachedValueRowReachesEveryOutputAttendingToIt) {
  // kv head 0's V row 2 (cached, so every token attends to it) is NaN: every output of query
  // heads 0-1 (kv head 0) is NaN, heads 2-3 (kv head 1) stay finite.
  const AttentionParams p{3, 4, 2, 8, 6, 9, 0.0f};
  for (int tier = 0; tier < 3; ++tier) {
    Case c = random_case(p, 18);
    for (int64_t d = 0; d < 8; ++d) c.v_cache[2 * c.row() + d] = test::kNan;
    c.run(tier);
    for (int64_t t = 0; t < 3; ++t)
      for (int64_t h = 0; h < 4; ++h)
        for (int64_t d = 0; d < 8; ++d)
          EXPECT_EQ(std::isnan(c.o[(t * 4 + h) * 8 + d]), h < 2) << test::kTierNames[tier] << " t " << t << " h " << h;
  }
}

TEST(attention, NanInNewValueLaneIsCausal) {
  // Lane 5 of token 1's new v (kv head 1) is NaN: lane 5 of query heads 2-3 is NaN for tokens
  // 1 and 2, which attend to row past + 1; token 0 does not, and no other lane is touched.
  const AttentionParams p{3, 4, 2, 8, 6, 9, 0.0f};
  for (int tier = 0; tier < 3; ++tier) {
    Case c = random_case(p, 19);
    c.v[1 * c.row() + 8 + 5] = test::kNan;
    c.run(tier);
    for (int64_t t = 0; t < 3; ++t)
      for (int64_t h = 0; h < 4; ++h)
        for (int64_t d = 0; d < 8; ++d)
          EXPECT_EQ(std::isnan(c.o[(t * 4 + h) * 8 + d]), t >= 1 && h >= 2 && d == 5)
              << test::kTierNames[tier] << " t " << t << " h " << h << " d " << d;
  }
}

TEST(attention, NanInQueryOrKeyReachesThatHeadsOutputs) {
  // A NaN score makes the whole softmax of that head NaN (its exp enters the sum).
  const AttentionParams p{2, 4, 2, 8, 6, 8, 0.0f};
  for (int tier = 0; tier < 3; ++tier) {
    Case c = random_case(p, 20);
    c.q[(1 * 4 + 3) * 8 + 2] = test::kNan;  // token 1, head 3
    c.k_cache[4 * c.row() + 0 * 8 + 1] = test::kNan;  // kv head 0, row 4: heads 0-1 of both tokens
    c.run(tier);
    for (int64_t t = 0; t < 2; ++t)
      for (int64_t h = 0; h < 4; ++h)
        for (int64_t d = 0; d < 8; ++d)
          EXPECT_EQ(std::isnan(c.o[(t * 4 + h) * 8 + d]), h < 2 || (t == 1 && h == 3))
              << test::kTierNames[tier] << " t " << t << " h " << h;
  }
}

TEST(attention, BadArguments) {
  for (int tier = 0; tier < 3; ++tier) {
    Case c = random_case({2, 4, 2, 8, 3, 5, 0.0f}, 21);
    auto call = [&](AttentionParams p) { return [&c, p, tier] { kTiers[tier](p, c.q, c.gate, c.k, c.v, c.k_cache, c.v_cache, c.o); }; };
    test::expect_error(call({2, 4, 2, 8, 4, 5, 0.0f}), "attention: past + tokens = 4 + 2 exceeds the cache capacity 5 rows");
    test::expect_error(call({2, 4, 3, 8, 3, 5, 0.0f}), "attention: q_heads=4 is not a multiple of kv_heads=3");
    test::expect_error(call({2, 4, 2, 0, 3, 5, 0.0f}), "head_dim=0");
    test::expect_error(call({2, 4, 2, 8, -1, 5, 0.0f}), "past=-1");
    test::expect_error(call({2, 4, 2, 8, 3, 5, -1.0f}), "scale=-1");
    test::expect_error(call({2, 4, 2, 8, 3, 5, test::kNan}), "scale=nan");
    test::expect_error(call({2, 4, 2, 8, 3, 6, 0.0f}), "attention: k_cache has 80 elements, expected 96");
    test::expect_error(call({1, 4, 2, 8, 3, 5, 0.0f}), "attention: q has 64 elements, expected 32");
    test::expect_error(call({2, 4, 2, 8, 0, int64_t(1) << 62, 0.0f}), "cache size overflows int64");
    auto bad = [&](auto&& f, const char* needle) { test::expect_error(f, needle); };
    const AttentionParams p{2, 4, 2, 8, 3, 5, 0.0f};
    std::vector<float> short_gate(63);
    bad([&] { kTiers[tier](p, c.q, short_gate, c.k, c.v, c.k_cache, c.v_cache, c.o); },
        "attention: gate has 63 elements, expected 64");
    bad([&] { kTiers[tier](p, c.q, c.gate, c.k, c.v, c.k_cache, c.v_cache, std::span<float>(c.q)); }, "attention: o overlaps q");
    bad([&] { kTiers[tier](p, c.q, c.gate, c.k, c.v, c.k_cache, c.k_cache, c.o); }, "k_cache and v_cache overlap");
  }
}

TEST(attention, ThreeWayAgreement) {
  // The remainder scope, plus two real shapes (the whole real scope, past up to 8191 with
  // T = 8, runs in `moeoracle selfcheck`; its f64 tier is too slow for a unit test).
  test::expect_all_pass(attention_check(1234, CheckScope::Remainders));
  test::expect_all_pass({attention_check_one("A17B past 4095 T 1", {1, 32, 2, 256, 4095, 4097, 0.0f}, 99),
                         attention_check_one("A3B past 60 T 8", {8, 16, 2, 256, 60, 70, 0.0f}, 100)});
}

}  // namespace
}  // namespace moe
