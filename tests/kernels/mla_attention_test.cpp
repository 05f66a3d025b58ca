#include <array>
#include <cmath>
#include <cstring>
#include <limits>

#include "check/checks.h"
#include "core/bf16.h"
#include "core/check_util.h"
#include "core/params.h"
#include "core/rng.h"
#include "core/test_data.h"
#include "ops/mla_attention.h"
#include "test_util.h"

namespace moe {
namespace {

using Tier = void (*)(const MlaAttentionParams&, std::span<const float>, std::span<const float>,
                      std::span<const float>, const MlaKvB&, std::span<float>, std::span<float>, std::span<float>);
const Tier kTiers[] = {&mla_attention_ref<double>, &mla_attention_ref<float>, &mla_attention_fast};

// Inputs of one call. Cache rows at and past `past` start as NaN: a tier that read a row it has
// not written (beyond its causal window) would turn outputs into NaN.
struct Case {
  MlaAttentionParams p;
  std::vector<float> q, latent, k_pe, latent_cache, kpe_cache, o;
  QuantStorage kv_b;
  void run(int tier) { kTiers[tier](p, q, latent, k_pe, kv_b.view(), latent_cache, kpe_cache, o); }
};

MlaAttentionParams params(int64_t T, int64_t H, int64_t Dn, int64_t Dr, int64_t Dv, int64_t L, int64_t past,
                          int64_t capacity, int bits = 4, int group = 8, float scale = 0.0f) {
  return {T, H, Dn, Dr, Dv, L, past, capacity, bits, group, scale};
}

Case random_case(const MlaAttentionParams& p, uint64_t seed) {
  Rng rng(seed);
  Case c;
  c.p = p;
  c.q = rng.fork(1).normal_vec(p.tokens * p.heads * (p.nope_dim + p.rope_dim), 1.5);
  c.latent = rng.fork(2).normal_vec(p.tokens * p.kv_lora, 1.0);
  c.k_pe = rng.fork(3).normal_vec(p.tokens * p.rope_dim, 1.0);
  c.latent_cache = rng.fork(4).normal_vec(p.capacity * p.kv_lora, 1.0);
  c.kpe_cache = rng.fork(5).normal_vec(p.capacity * p.rope_dim, 1.0);
  for (int64_t i = p.past * p.kv_lora; i < p.capacity * p.kv_lora; ++i) c.latent_cache[i] = test::kNan;
  for (int64_t i = p.past * p.rope_dim; i < p.capacity * p.rope_dim; ++i) c.kpe_cache[i] = test::kNan;
  c.kv_b = random_quant(rng.fork(6), p.heads * (p.nope_dim + p.v_dim), p.kv_lora, p.bits, p.group_size);
  c.o.assign(p.tokens * p.heads * p.v_dim, 0.0f);
  return c;
}

// Bitwise equality that also treats NaN == NaN (the caches hold NaN sentinels).
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// A hand-built kv_b, 8-bit, one group of 4 per row, scale 1 and bias -2: value = code - 2.
QuantStorage hand_kv_b(const std::vector<std::array<int, 4>>& values) {
  QuantStorage m;
  m.rows = int64_t(values.size()), m.cols = 4, m.bits = 8, m.group_size = 4;
  for (const auto& row : values) {
    uint32_t word = 0;
    for (int c = 0; c < 4; ++c) word |= uint32_t(row[c] + 2) << (8 * c);
    m.w.push_back(word);
    m.scales.push_back(f32_to_bf16_rne(1.0f));
    m.biases.push_back(f32_to_bf16_rne(-2.0f));
  }
  return m;
}

TEST(mla_attention, HandComputed) {
  // H 2, Dn 1, Dr 1, Dv 2, L 4, scale 0.5, one cached row (past 1) and one new token.
  //   head 0: W_kb = [1 0 0 0] (k_nope = lat[0]),  W_vb = [0 2 0 0; 0 0 -1 0] (v = [2 lat[1], -lat[2]])
  //   head 1: W_kb = [0 0 0 1] (k_nope = lat[3]),  W_vb = [1 0 0 0; 0 0 0 -2] (v = [lat[0], -2 lat[3]])
  //   rows: lat_0 = [0 1 3 9], kpe_0 = 0;  lat_1 = [1 5 -1 7], kpe_1 = 2 ln 3 - 1 (shared by both heads)
  // Head 0, q = [1 | 1]: dots [0, 1 + 2 ln 3 - 1] -> scores [0, ln 3] -> P = [1/4, 3/4];
  //   v_0 = [2, -3], v_1 = [10, 1] -> o = [1/2 + 15/2, -3/4 + 3/4] = [8, 0].
  // Head 1, q = [1/4 | 1]: dots [9/4, 7/4 + 2 ln 3 - 1] -> scores [9/8, 3/8 + ln 3]; P_1 = 3 e^-3/4 /
  //   (1 + 3 e^-3/4), P_0 = 1 - P_1; v_0 = [0, -18], v_1 = [1, -14] -> o = [P_1, -18 P_0 - 14 P_1].
  // Dropping the scale, not sharing k_pe, swapping W_kb/W_vb, or seeing one row more or less (the
  // causal window) each changes these numbers.
  const float kpe1 = float(2 * std::log(3.0) - 1);
  const double r = 3 * std::exp(-0.75), p1 = r / (1 + r), p0 = 1 - p1;
  // kpe_1 is not exactly 2 ln 3 - 1 in f32: its rounding moves the scores by < 2^-24 * 1.2, so
  // P by < 1e-7 relative; the tiers' own error is f32 rounding on numbers <= 18.
  const double want[] = {8, 0, p1, -18 * p0 - 14 * p1};
  for (int tier = 0; tier < 3; ++tier) {
    Case c;
    c.p = params(1, 2, 1, 1, 2, 4, 1, 2, 8, 4, 0.5f);
    c.q = {1, 1, 0.25f, 1};
    c.latent = {1, 5, -1, 7}, c.k_pe = {kpe1};
    c.latent_cache = {0, 1, 3, 9, test::kNan, test::kNan, test::kNan, test::kNan}, c.kpe_cache = {0, test::kNan};
    c.kv_b = hand_kv_b({{1, 0, 0, 0}, {0, 2, 0, 0}, {0, 0, -1, 0}, {0, 0, 0, 1}, {1, 0, 0, 0}, {0, 0, 0, -2}});
    c.o.assign(4, test::kNan);
    c.run(tier);
    for (int i = 0; i < 4; ++i) EXPECT_NEAR(c.o[i], want[i], 1e-5) << test::kTierNames[tier] << " o[" << i << "]";
    EXPECT_EQ(c.latent_cache[7], 7.0f);
    EXPECT_EQ(c.kpe_cache[1], kpe1);
  }
}

// The absorbed form written plainly in f64, from the definitions (exact weights q s + b):
//   q'_h = W_kb,h^T q_nope_h,  s_p = (q'_h . lat_p + q_pe_h . kpe_p) scale,  P = softmax(s),
//   vc = sum_p P_p lat_p,  o_h = W_vb,h vc.
std::vector<double> absorbed_f64(const Case& c) {
  const MlaAttentionParams& p = c.p;
  const int64_t H = p.heads, Dn = p.nope_dim, Dr = p.rope_dim, Dv = p.v_dim, L = p.kv_lora;
  const QuantMatrix W = c.kv_b.view();
  auto w = [&](int64_t r, int64_t col) {
    const int64_t g = r * W.groups_per_row() + col / W.group_size;
    return double(quant_code(W.w + r * W.words_per_row(), col, W.bits)) * double(bf16_to_f32(W.scales[g])) +
           double(bf16_to_f32(W.biases[g]));
  };
  const double scale = p.scale != 0 ? p.scale : 1 / std::sqrt(double(Dn + Dr));
  std::vector<double> o(p.tokens * H * Dv);
  for (int64_t t = 0; t < p.tokens; ++t) {
    const int64_t len = p.past + t + 1;
    for (int64_t h = 0; h < H; ++h) {
      const float* qh = c.q.data() + (t * H + h) * (Dn + Dr);
      std::vector<double> qp(L, 0.0), s(len), vc(L, 0.0);
      for (int64_t col = 0; col < L; ++col)
        for (int64_t d = 0; d < Dn; ++d) qp[col] += qh[d] * w(h * (Dn + Dv) + d, col);
      double mx = -INFINITY, sum = 0;
      for (int64_t pos = 0; pos < len; ++pos) {
        double dot = 0;
        for (int64_t col = 0; col < L; ++col) dot += qp[col] * c.latent_cache[pos * L + col];
        for (int64_t j = 0; j < Dr; ++j) dot += double(qh[Dn + j]) * c.kpe_cache[pos * Dr + j];
        s[pos] = dot * scale, mx = std::max(mx, s[pos]);
      }
      for (double& x : s) sum += (x = std::exp(x - mx));
      for (int64_t pos = 0; pos < len; ++pos)
        for (int64_t col = 0; col < L; ++col) vc[col] += s[pos] / sum * c.latent_cache[pos * L + col];
      for (int64_t e = 0; e < Dv; ++e)
        for (int64_t col = 0; col < L; ++col) o[(t * H + h) * Dv + e] += w(h * (Dn + Dv) + Dn + e, col) * vc[col];
    }
  }
  return o;
}

TEST(mla_attention, AbsorbedFormEqualsNaiveTruthInF64) {
  // Absorbing W_kb into q and applying W_vb after the softmax is exact algebra; in f64 the two
  // evaluations differ by rounding only: ~(Dn + L) 2^-53 relative to the sums of |terms|, far
  // below 1e-12 of the largest output here (the |terms| sums are within ~100x of max |o|).
  const MlaAttentionParams shapes[] = {params(3, 3, 5, 3, 7, 24, 4, 7), params(2, 2, 17, 9, 11, 96, 30, 32, 2, 16),
                                       params(1, 2, 128, 64, 128, 512, 60, 61, 4, 64, 0.1f)};
  for (const MlaAttentionParams& p : shapes) {
    Case c = random_case(p, 31);
    for (int64_t i = 0; i < p.tokens * p.kv_lora; ++i) c.latent_cache[p.past * p.kv_lora + i] = c.latent[i];
    for (int64_t i = 0; i < p.tokens * p.rope_dim; ++i) c.kpe_cache[p.past * p.rope_dim + i] = c.k_pe[i];
    const std::vector<double> naive = mla_attention_naive_f64(p, c.q, c.kv_b.view(), c.latent_cache, c.kpe_cache);
    const std::vector<double> absorbed = absorbed_f64(c);
    ASSERT_EQ(naive.size(), absorbed.size());
    double max_o = 0, max_diff = 0;
    for (size_t i = 0; i < naive.size(); ++i)
      max_o = std::max(max_o, std::fabs(naive[i])), max_diff = std::max(max_diff, std::fabs(naive[i] - absorbed[i]));
    EXPECT_GT(max_o, 0.1) << params_to_string(p);
    EXPECT_LE(max_diff, 1e-12 * max_o) << params_to_string(p);
  }
}

// The f32 tier's documented order (mla_attention.h steps 1-5) written out once more, from the
// header, as an engine would: weights fma(code, s, b); q' fma chains over d; one fma chain over
// [q' | q_pe] . [lat | kpe] then * scale; attention's softmax; vc += P lat; o = fma chain over c.
std::vector<float> engine_absorbed_f32(const Case& c) {
  const MlaAttentionParams& p = c.p;
  const int64_t H = p.heads, Dn = p.nope_dim, Dr = p.rope_dim, Dv = p.v_dim, L = p.kv_lora;
  const QuantMatrix W = c.kv_b.view();
  auto w = [&](int64_t r, int64_t col) {
    const int64_t g = r * W.groups_per_row() + col / W.group_size;
    return std::fma(float(quant_code(W.w + r * W.words_per_row(), col, W.bits)), bf16_to_f32(W.scales[g]),
                    bf16_to_f32(W.biases[g]));
  };
  std::vector<float> lat = c.latent_cache, kpe = c.kpe_cache, out(p.tokens * H * Dv);
  std::copy(c.latent.begin(), c.latent.end(), lat.begin() + p.past * L);
  std::copy(c.k_pe.begin(), c.k_pe.end(), kpe.begin() + p.past * Dr);
  const float scale = p.scale != 0 ? p.scale : 1.0f / std::sqrt(float(Dn + Dr));
  for (int64_t t = 0; t < p.tokens; ++t)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t len = p.past + t + 1;
      const float* qh = c.q.data() + (t * H + h) * (Dn + Dr);
      std::vector<float> qp(L), s(len), vc(L, 0.0f);
      for (int64_t col = 0; col < L; ++col) {
        float acc = 0.0f;
        for (int64_t d = 0; d < Dn; ++d) acc = std::fma(qh[d], w(h * (Dn + Dv) + d, col), acc);
        qp[col] = acc;
      }
      for (int64_t pos = 0; pos < len; ++pos) {
        float dot = 0.0f;
        for (int64_t col = 0; col < L; ++col) dot = std::fma(qp[col], lat[pos * L + col], dot);
        for (int64_t j = 0; j < Dr; ++j) dot = std::fma(qh[Dn + j], kpe[pos * Dr + j], dot);
        s[pos] = dot * scale;
      }
      float mx = s[0], sum = 0.0f;
      for (int64_t i = 1; i < len; ++i)
        if (s[i] > mx) mx = s[i];
      for (float& x : s) sum += (x = std::exp(x - mx));
      const float inv = 1.0f / sum;
      for (float& x : s) x *= inv;
      for (int64_t pos = 0; pos < len; ++pos)
        for (int64_t col = 0; col < L; ++col) vc[col] = vc[col] + s[pos] * lat[pos * L + col];
      for (int64_t e = 0; e < Dv; ++e) {
        float acc = 0.0f;
        for (int64_t col = 0; col < L; ++col) acc = std::fma(w(h * (Dn + Dv) + Dn + e, col), vc[col], acc);
        out[(t * H + h) * Dv + e] = acc;
      }
    }
  return out;
}

TEST(mla_attention, F32TierMatchesDocumentedOrderBitExact) {
  const MlaAttentionParams shapes[] = {params(3, 3, 5, 3, 7, 24, 4, 8), params(2, 2, 17, 9, 11, 96, 30, 32, 2, 16),
                                       params(1, 2, 128, 64, 128, 512, 40, 41, 4, 64, 0.135f)};
  for (const MlaAttentionParams& p : shapes) {
    Case c = random_case(p, 41);
    const std::vector<float> want = engine_absorbed_f32(c);
    c.run(1);
    EXPECT_TRUE(same_bits(c.o, want)) << params_to_string(p);
  }
}

TEST(mla_attention, CacheRowsAreExactCopies) {
  // Rows [past, past + T) become latent and k_pe bit for bit; every other row is untouched.
  const MlaAttentionParams p = params(3, 2, 5, 3, 4, 16, 5, 11);
  for (int tier = 0; tier < 3; ++tier) {
    Case c = random_case(p, 12);
    std::vector<float> lc = c.latent_cache, kc = c.kpe_cache;
    std::copy(c.latent.begin(), c.latent.end(), lc.begin() + p.past * p.kv_lora);
    std::copy(c.k_pe.begin(), c.k_pe.end(), kc.begin() + p.past * p.rope_dim);
    c.run(tier);
    EXPECT_TRUE(same_bits(c.latent_cache, lc)) << test::kTierNames[tier];
    EXPECT_TRUE(same_bits(c.kpe_cache, kc)) << test::kTierNames[tier];
  }
}

TEST(mla_attention, ZeroTokensDoesNothing) {
  const MlaAttentionParams p = params(0, 2, 5, 3, 4, 16, 3, 3);
  for (int tier = 0; tier < 3; ++tier) {
    Case c = random_case(p, 13);
    const std::vector<float> lc = c.latent_cache, kc = c.kpe_cache;
    c.run(tier);
    EXPECT_TRUE(same_bits(c.latent_cache, lc) && same_bits(c.kpe_cache, kc)) << test::kTierNames[tier];
  }
}

TEST(mla_attention, PrefillEqualsOneTokenCalls) {
  // Token t of a prefill sees rows [0, past + t + 1), exactly what a one-token call at past + t
  // sees, so the results agree bit for bit in each tier. Shapes: odd sizes, a prefill across the
  // fast tier's chunk boundary, a wider head. Unwritten rows are NaN in both runs.
  const MlaAttentionParams shapes[] = {params(5, 3, 5, 3, 7, 24, 4, 9),
                                       params(6, 2, 8, 4, 8, 32, kMlaFastChunk - 3, kMlaFastChunk + 3, 4, 32),
                                       params(3, 4, 32, 16, 32, 128, 20, 23, 2, 64)};
  for (const MlaAttentionParams& p : shapes) {
    for (int tier = 0; tier < 3; ++tier) {
      Case all = random_case(p, 14);
      Case one = all;
      all.run(tier);
      const int64_t qn = p.heads * (p.nope_dim + p.rope_dim), on = p.heads * p.v_dim;
      for (int64_t t = 0; t < p.tokens; ++t) {
        MlaAttentionParams pt = p;
        pt.tokens = 1, pt.past = p.past + t;
        const std::vector<float> q(one.q.begin() + t * qn, one.q.begin() + (t + 1) * qn);
        const std::vector<float> lat(one.latent.begin() + t * p.kv_lora, one.latent.begin() + (t + 1) * p.kv_lora);
        const std::vector<float> kpe(one.k_pe.begin() + t * p.rope_dim, one.k_pe.begin() + (t + 1) * p.rope_dim);
        std::vector<float> o(on);
        kTiers[tier](pt, q, lat, kpe, one.kv_b.view(), one.latent_cache, one.kpe_cache, o);
        std::copy(o.begin(), o.end(), one.o.begin() + t * on);
      }
      EXPECT_TRUE(same_bits(all.o, one.o)) << test::kTierNames[tier] << " " << params_to_string(p);
      EXPECT_TRUE(same_bits(all.latent_cache, one.latent_cache) && same_bits(all.kpe_cache, one.kpe_cache))
          << test::kTierNames[tier];
      for (float x : all.o) ASSERT_FALSE(std::isnan(x)) << test::kTierNames[tier] << " read an unwritten row";
    }
  }
}

TEST(mla_attention, DefaultScaleIsInverseSqrtOfQkDim) {
  // Dn + Dr = 48 + 16 = 64: 1/sqrt(64) = 0.125 exactly, so scale 0 and 0.125 agree bit for bit;
  // scale 0.25 must not (the scale is applied).
  for (int tier = 0; tier < 3; ++tier) {
    Case a = random_case(params(2, 2, 48, 16, 8, 32, 9, 11), 15);
    Case b = a, c = a;
    b.p.scale = 0.125f, c.p.scale = 0.25f;
    a.run(tier), b.run(tier), c.run(tier);
    EXPECT_TRUE(same_bits(a.o, b.o)) << test::kTierNames[tier];
    EXPECT_FALSE(same_bits(a.o, c.o)) << test::kTierNames[tier];
  }
}

TEST(mla_attention, NanInCachedLatentReachesEveryHead) {
  // Every head attends to every cached row through the shared latent: a NaN in row 2 makes
  // every output NaN. A NaN in a new token's k_pe reaches its own and later tokens only.
  const MlaAttentionParams p = params(3, 3, 5, 3, 4, 16, 6, 9);
  for (int tier = 0; tier < 3; ++tier) {
    Case c = random_case(p, 18);
    c.latent_cache[2 * p.kv_lora + 5] = test::kNan;
    c.run(tier);
    for (float x : c.o) EXPECT_TRUE(std::isnan(x)) << test::kTierNames[tier];
    Case d = random_case(p, 19);
    d.k_pe[1 * p.rope_dim + 2] = test::kNan;
    d.run(tier);
    for (int64_t t = 0; t < 3; ++t)
      for (int64_t i = 0; i < p.heads * p.v_dim; ++i)
        EXPECT_EQ(std::isnan(d.o[t * p.heads * p.v_dim + i]), t >= 1) << test::kTierNames[tier] << " t " << t;
  }
}

TEST(mla_attention, BadArguments) {
  for (int tier = 0; tier < 3; ++tier) {
    Case c = random_case(params(2, 2, 5, 3, 4, 16, 3, 5), 21);
    auto call = [&](MlaAttentionParams p) {
      return [&c, p, tier] { kTiers[tier](p, c.q, c.latent, c.k_pe, c.kv_b.view(), c.latent_cache, c.kpe_cache, c.o); };
    };
    test::expect_error(call(params(2, 2, 5, 3, 4, 16, 4, 5)),
                       "mla_attention: past + tokens = 4 + 2 exceeds the cache capacity 5 rows");
    test::expect_error(call(params(2, 2, 0, 3, 4, 16, 3, 5)), "nope_dim=0");
    test::expect_error(call(params(2, 2, 5, 3, 4, 16, -1, 5)), "past=-1");
    test::expect_error(call(params(2, 2, 5, 3, 4, 16, 3, 5, 4, 8, -1.0f)), "scale=-1");
    test::expect_error(call(params(2, 2, 5, 3, 4, 16, 3, 5, 4, 8, test::kNan)), "scale=nan");
    test::expect_error(call(params(2, 3, 5, 3, 4, 16, 3, 5)),
                       "mla_attention: kv_b is [18, 16] bits=4 group_size=8, expected [heads*(nope_dim+v_dim), "
                       "kv_lora] = [27, 16]");
    test::expect_error(call(params(2, 2, 5, 3, 4, 16, 3, 5, 8)), "bits=8 group_size=8");
    test::expect_error(call(params(2, 2, 6, 2, 4, 16, 3, 5)), "kv_b is [18, 16]");
    test::expect_error(call(params(2, 2, 5, 4, 4, 16, 3, 5)), "mla_attention: q has 32 elements, expected 36");
    test::expect_error(call(params(2, 2, 5, 3, 4, 16, 3, 6)), "mla_attention: latent_cache has 80 elements, expected 96");
    test::expect_error(call(params(1, 2, 5, 3, 4, 16, 3, 5)), "q has 32 elements, expected 16");
    test::expect_error(call(params(2, 2, 5, 3, 4, 16, 0, int64_t(1) << 62)), "latent_cache size overflows int64");
    const MlaAttentionParams p = params(2, 2, 5, 3, 4, 16, 3, 5);
    auto run = [&](auto q, auto lat, auto kpe, const QuantMatrix& W, auto lc, auto kc, auto o) {
      return [=, &W] { kTiers[tier](p, q, lat, kpe, W, lc, kc, o); };
    };
    const QuantMatrix W = c.kv_b.view();
    std::span<float> lc(c.latent_cache), kc(c.kpe_cache), o(c.o);
    std::vector<float> short_kpe(5), short_o(15);
    test::expect_error(run(std::span<const float>(c.q), std::span<const float>(c.latent), std::span<const float>(short_kpe), W, lc, kc, o),
                       "mla_attention: k_pe has 5 elements, expected 6");
    test::expect_error(run(std::span<const float>(c.q), std::span<const float>(c.latent), std::span<const float>(c.k_pe), W, lc, kc,
                           std::span<float>(short_o)),
                       "mla_attention: o has 15 elements, expected 16");
    test::expect_error(run(std::span<const float>(c.q), std::span<const float>(lc.subspan(0, 32)), std::span<const float>(c.k_pe),
                           W, lc, kc, o),
                       "mla_attention: latent overlaps a cache");
    test::expect_error(run(std::span<const float>(c.q), std::span<const float>(c.latent), std::span<const float>(c.k_pe), W, lc, kc,
                           std::span<float>(c.q).subspan(0, 16)),
                       "mla_attention: o overlaps q");
    test::expect_error(run(std::span<const float>(c.q), std::span<const float>(c.latent), std::span<const float>(c.k_pe), W, lc,
                           lc.subspan(0, 15), o),
                       "latent_cache and kpe_cache overlap");
    QuantMatrix bad = W;
    bad.group_size = 6;
    test::expect_error(run(std::span<const float>(c.q), std::span<const float>(c.latent), std::span<const float>(c.k_pe), bad, lc, kc, o),
                       "mla_attention: kv_b has group_size=6, expected a positive multiple of 8");
  }
}

// llama.cpp's split (k_b = W_kb,h transposed per head, v_b = W_vb,h) holding the same values as an
// MLX kv_b gives the same bits in every tier: the transposition and the head offsets are right.
// f32 k_b / v_b hold the MLX values exactly (asserted), so the only difference is the layout.
struct GgufSplit {
  std::vector<float> k_b, v_b;
  MlaKvB view(const MlaAttentionParams& p) const {
    return {BlockMatrix{0, reinterpret_cast<const uint8_t*>(k_b.data()), p.heads * p.kv_lora, p.nope_dim},
            BlockMatrix{0, reinterpret_cast<const uint8_t*>(v_b.data()), p.heads * p.v_dim, p.kv_lora}};
  }
};
GgufSplit gguf_split(const MlaAttentionParams& p, const QuantMatrix& kv_b) {
  const int64_t Dn = p.nope_dim, Dv = p.v_dim, L = p.kv_lora;
  GgufSplit g;
  g.k_b.resize(size_t(p.heads * L * Dn)), g.v_b.resize(size_t(p.heads * Dv * L));
  for (int64_t h = 0; h < p.heads; ++h) {
    std::vector<double> wk(size_t(Dn * L)), wv(size_t(Dv * L));
    mla_kv_b_head<double>(p, kv_b, h, wk.data(), wv.data());
    for (int64_t d = 0; d < Dn; ++d)
      for (int64_t c = 0; c < L; ++c) {
        const double v = wk[size_t(d * L + c)];
        EXPECT_EQ(double(float(v)), v) << "an MLX value this test needs exact in f32";
        g.k_b[size_t((h * L + c) * Dn + d)] = float(v);
      }
    for (int64_t i = 0; i < Dv * L; ++i) g.v_b[size_t(h * Dv * L + i)] = float(wv[size_t(i)]);
  }
  return g;
}

TEST(mla_attention, LlamaCppSplitEqualsMlxKvB) {
  for (const MlaAttentionParams& mp : {params(3, 3, 5, 3, 7, 24, 4, 9), params(1, 2, 16, 4, 9, 64, 30, 33, 8, 32, 0.3f)}) {
    Case c = random_case(mp, 77);
    MlaAttentionParams gp = mp;
    gp.kv_ggml_type = 0;
    const GgufSplit g = gguf_split(mp, c.kv_b.view());
    for (int tier = 0; tier < 3; ++tier) {
      Case a = c, b = c;
      a.run(tier);
      kTiers[tier](gp, b.q, b.latent, b.k_pe, g.view(gp), b.latent_cache, b.kpe_cache, b.o);
      EXPECT_TRUE(same_bits(a.o, b.o)) << test::kTierNames[tier];
      EXPECT_TRUE(same_bits(a.latent_cache, b.latent_cache)) << test::kTierNames[tier];
    }
  }
}

TEST(mla_attention, LlamaCppSplitBadArguments) {
  const MlaAttentionParams mp = params(2, 2, 32, 3, 4, 64, 3, 5);
  Case c = random_case(mp, 5);
  std::vector<uint8_t> k(size_t(2 * 64 * 34), 0), v(size_t(2 * 4 * 64 / 32 * 34), 0);  // q8_0: 34 bytes per 32
  MlaAttentionParams gp = mp;
  gp.kv_ggml_type = 8;
  auto call = [&](const MlaAttentionParams& p, const MlaKvB& kv) {
    return [&c, p, kv] { mla_attention_ref<double>(p, c.q, c.latent, c.k_pe, kv, c.latent_cache, c.kpe_cache, c.o); };
  };
  const BlockMatrix kb{8, k.data(), 128, 32}, vb{8, v.data(), 8, 64};
  EXPECT_NO_THROW(call(gp, MlaKvB(kb, vb))());
  test::expect_error(call(mp, MlaKvB(kb, vb)), "mla_attention: k_b is ggml type 8, params say kv_ggml_type=-1");
  test::expect_error(call(gp, c.kv_b.view()), "kv_ggml_type=8 says llama.cpp's k_b / v_b, but kv_b is an MLX matrix");
  test::expect_error(call(gp, MlaKvB(BlockMatrix{8, k.data(), 64, 32}, vb)),
                     "mla_attention: k_b is [64, 32], expected [128, 32] with whole blocks of 32");
  test::expect_error(call(gp, MlaKvB(kb, BlockMatrix{8, v.data(), 8, 32})), "mla_attention: v_b is [8, 32], expected [8, 64]");
  MlaAttentionParams odd = params(2, 2, 16, 3, 4, 64, 3, 5);
  odd.kv_ggml_type = 8;
  test::expect_error(call(odd, MlaKvB(BlockMatrix{8, k.data(), 128, 16}, vb)), "with whole blocks of 32");
  test::expect_error(call(gp, MlaKvB(BlockMatrix{8, k.data(), 128, 32}, BlockMatrix{99, v.data(), 8, 64})),
                     "mla_attention: v_b is ggml type 99, which core/ggml_blocks.h does not decode");
}

TEST(mla_attention, ThreeWayAgreementRemainders) { test::expect_all_pass(mla_attention_check(1234, CheckScope::Remainders)); }

TEST(mla_attention, ThreeWayAgreementRealShapes) {
  // Cogito-V2 / DeepSeek-V3 (H 128, Dn 128, Dr 64, Dv 128, L 512, 4- and 8-bit kv_b G64), decode and
  // prefill with a few hundred cached rows (the scalar tiers on windows of heads).
  test::expect_all_pass(mla_attention_check(99, CheckScope::Real));
}

}  // namespace
}  // namespace moe
