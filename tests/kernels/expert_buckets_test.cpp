#include <cmath>
#include <limits>
#include <set>
#include <utility>

#include "check/checks.h"
#include "core/rng.h"
#include "ops/expert_buckets.h"
#include "test_util.h"

namespace moe {
namespace {

using Fn = void (*)(const ExpertBucketsParams&, std::span<const int32_t>, std::span<const float>, ExpertBuckets&);
const Fn kTiers[3] = {&expert_buckets_ref<double>, &expert_buckets_ref<float>, &expert_buckets_fast};

TEST(expert_buckets, HandComputed) {
  // T = 3, K = 2, E = 6: token 0 -> {5, 1}, token 1 -> {1, 3}, token 2 -> {3, 5}.
  const std::vector<int32_t> idx{5, 1, 1, 3, 3, 5};
  const std::vector<float> w{0.6f, 0.4f, 0.7f, 0.3f, 0.2f, 0.8f};
  for (int tier = 0; tier < 3; ++tier) {
    ExpertBuckets b;
    b.token_idx = {99};  // stale content is replaced
    kTiers[tier]({3, 2, 6}, idx, w, b);
    EXPECT_EQ(b.expert_ids, (std::vector<int32_t>{1, 3, 5})) << tier;
    EXPECT_EQ(b.offsets, (std::vector<uint32_t>{0, 2, 4, 6})) << tier;
    EXPECT_EQ(b.token_idx, (std::vector<int32_t>{0, 1, 1, 2, 0, 2})) << tier;
    EXPECT_EQ(b.weights, (std::vector<float>{0.4f, 0.7f, 0.3f, 0.2f, 0.6f, 0.8f})) << tier;
    EXPECT_NO_THROW(validate_expert_buckets(b, 3, 6, "test"));
  }
}

TEST(expert_buckets, InvariantsOnRandomRouting) {
  const int64_t T = 97, K = 10, E = 512;
  Rng rng(3);
  std::vector<int32_t> idx(T * K);
  std::vector<float> w(T * K);
  for (int64_t t = 0; t < T; ++t) {
    std::set<int32_t> used;
    for (int64_t k = 0; k < K; ++k) {
      int32_t e;
      do e = int32_t(rng.below(40));  // 40 hot experts of 512: buckets with many rows
      while (!used.insert(e).second);
      idx[t * K + k] = e;
      w[t * K + k] = float(t * K + k);  // the weight names its (t, k): exact in f32
    }
  }
  for (int tier = 0; tier < 3; ++tier) {
    ExpertBuckets b;
    kTiers[tier]({T, K, E}, idx, w, b);
    const size_t B = b.expert_ids.size();
    ASSERT_EQ(b.offsets.size(), B + 1);
    EXPECT_EQ(b.offsets[0], 0u);
    EXPECT_EQ(b.offsets[B], uint32_t(T * K));
    std::set<std::pair<int64_t, int64_t>> seen;
    for (size_t i = 0; i < B; ++i) {
      EXPECT_LT(b.offsets[i], b.offsets[i + 1]);                   // monotone, no empty bucket
      if (i) {
        EXPECT_LT(b.expert_ids[i - 1], b.expert_ids[i]);  // experts ascending
      }
      for (uint32_t r = b.offsets[i]; r < b.offsets[i + 1]; ++r) {
        if (r > b.offsets[i]) {
          EXPECT_LT(b.token_idx[r - 1], b.token_idx[r]);  // tokens ascending
        }
        const int64_t tk = int64_t(b.weights[r]), t = tk / K, k = tk % K;
        EXPECT_EQ(t, b.token_idx[r]);
        EXPECT_EQ(idx[t * K + k], b.expert_ids[i]);  // the row sits in its expert's bucket
        EXPECT_TRUE(seen.insert({t, k}).second) << "row (" << t << ", " << k << ") twice";
      }
    }
    EXPECT_EQ(seen.size(), size_t(T * K));  // every (t, k) exactly once
    EXPECT_NO_THROW(validate_expert_buckets(b, T, E, "test"));
  }
}

TEST(expert_buckets, NanWeightsAreCarried) {
  const std::vector<int32_t> idx{2, 0};
  const std::vector<float> w{std::numeric_limits<float>::quiet_NaN(), 1.0f};
  for (int tier = 0; tier < 3; ++tier) {
    ExpertBuckets b;
    kTiers[tier]({1, 2, 3}, idx, w, b);
    EXPECT_EQ(b.weights[0], 1.0f);
    EXPECT_TRUE(std::isnan(b.weights[1]));
  }
}

TEST(expert_buckets, BadArguments) {
  ExpertBuckets b;
  const std::vector<float> w(4, 0.5f);
  test::expect_error([&] { expert_buckets_ref<double>({2, 2, 8}, std::vector<int32_t>{0, 1, 8, 2}, w, b); },
                     "expert_buckets: idx[1][0] = 8 out of range [0, 8)");
  test::expect_error([&] { expert_buckets_fast({2, 2, 8}, std::vector<int32_t>{0, 1, -1, 2}, w, b); },
                     "expert_buckets: idx[1][0] = -1 out of range [0, 8)");
  test::expect_error([&] { expert_buckets_fast({2, 2, 8}, std::vector<int32_t>{0, 1, 3, 3}, w, b); },
                     "expert_buckets: token 1 routes to expert 3 twice (slots 0 and 1)");
  test::expect_error([&] { expert_buckets_ref<float>({2, 2, 8}, std::vector<int32_t>{0, 1, 3}, w, b); },
                     "expert_buckets: idx has 3 elements, expected 4");
  test::expect_error([&] { expert_buckets_ref<float>({2, 2, 8}, std::vector<int32_t>{0, 1, 2, 3}, std::vector<float>(5), b); },
                     "expert_buckets: w has 5 elements, expected 4");
  test::expect_error([&] { expert_buckets_fast({2, 0, 8}, {}, {}, b); }, "k=0");
  test::expect_error([&] { expert_buckets_fast({1, 9, 8}, std::vector<int32_t>(9), std::vector<float>(9), b); },
                     "0 < k <= experts");
}

TEST(expert_buckets, ValidateRejectsBrokenBuckets) {
  ExpertBuckets good;
  expert_buckets_ref<double>({3, 2, 6}, std::vector<int32_t>{5, 1, 1, 3, 3, 5},
                             std::vector<float>{0.6f, 0.4f, 0.7f, 0.3f, 0.2f, 0.8f}, good);
  auto broken = [&](auto&& edit, const std::string& needle) {
    ExpertBuckets b = good;
    edit(b);
    test::expect_error([&] { validate_expert_buckets(b, 3, 6, "op"); }, needle);
  };
  broken([](ExpertBuckets& b) { b.offsets = {0, 2, 2, 6}; }, "op: bucket 1 (expert 3) has offsets 2..2");
  broken([](ExpertBuckets& b) { b.offsets = {0, 4, 2, 6}; }, "op: bucket 1 (expert 3) has offsets 4..2");
  broken([](ExpertBuckets& b) { b.offsets = {0, 2, 4, 5}; }, "op: buckets offsets[3] = 5 but token_idx has 6 rows");
  broken([](ExpertBuckets& b) { b.offsets = {1, 2, 4, 6}; }, "op: buckets offsets[0] = 1, expected 0");
  broken([](ExpertBuckets& b) { b.offsets.pop_back(); }, "op: buckets have 3 expert ids and 3 offsets, expected 4");
  broken([](ExpertBuckets& b) { b.weights.pop_back(); }, "weights 5, expected all equal");
  broken([](ExpertBuckets& b) { b.expert_ids = {1, 6, 5}; }, "op: bucket 1 expert id 6 out of range [0, 6)");
  broken([](ExpertBuckets& b) { b.expert_ids = {3, 1, 5}; }, "op: bucket 1 expert id 1 after 3, expected strictly ascending");
  broken([](ExpertBuckets& b) { b.token_idx[3] = 3; }, "op: row 3 token 3 out of range [0, 3)");
  broken([](ExpertBuckets& b) { b.token_idx[3] = 1; }, "op: row 3 of bucket 1 has token 1 after 1");
}

TEST(expert_buckets, ThreeWayAgreement) { test::expect_all_pass(expert_buckets_check(1234, CheckScope::All)); }

}  // namespace
}  // namespace moe
