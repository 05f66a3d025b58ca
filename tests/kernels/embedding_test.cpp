#include <cmath>

#include "check/checks.h"
#include "core/mlx_quantize.h"
#include "core/rng.h"
#include "core/test_data.h"
#include "ops/embedding.h"
#include "test_util.h"

namespace moe {
namespace {

void run_tier(int tier, const EmbeddingParams& p, const QuantMatrix& t, std::span<const int32_t> ids,
              std::span<float> y) {
  if (tier == 0) embedding_ref<double>(p, t, ids, y);
  if (tier == 1) embedding_ref<float>(p, t, ids, y);
  if (tier == 2) embedding_fast(p, t, ids, y);
}

TEST(embedding, HandComputed) {
  // Row v of a 3 x 64 table holds v*100 + (j % 16) - 15: 16 levels one apart with an integer
  // edge (v*100, or -15 for row 0), so the quantizer picks step +-1 and bias = edge, and the
  // lookup returns those values exactly (and a row mix-up would show).
  std::vector<float> x(3 * 64);
  for (int v = 0; v < 3; ++v)
    for (int j = 0; j < 64; ++j) x[v * 64 + j] = float(v * 100 + j % 16 - 15);
  const QuantStorage table = mlx_quantize(x, 3, 64, 4);
  const std::vector<int32_t> ids{2, 0, 2, 1};
  for (int tier = 0; tier < 3; ++tier) {
    std::vector<float> y(4 * 64);
    run_tier(tier, {4, 3, 64, 4, 64}, table.view(), ids, y);
    for (int t = 0; t < 4; ++t)
      for (int j = 0; j < 64; ++j) EXPECT_EQ(y[t * 64 + j], x[ids[t] * 64 + j]) << "tier " << tier;
  }
}

TEST(embedding, RowsAreTheDecodedTableRows) {
  // Independent of the dequant op: decode q*s + b straight from the packed table.
  const QuantStorage table = random_quant(Rng(6), 50, 256, 4);
  const std::vector<int32_t> ids{49, 0, 17, 17, 3};
  for (int tier = 0; tier < 3; ++tier) {
    std::vector<float> y(5 * 256);
    run_tier(tier, {5, 50, 256, 4, 64}, table.view(), ids, y);
    for (int t = 0; t < 5; ++t)
      for (int c = 0; c < 256; ++c) {
        const int64_t g = ids[t] * 4 + c / 64;
        const float q = float((table.w[ids[t] * 32 + c / 8] >> (4 * (c % 8))) & 15u);
        const float want = std::fma(q, bf16_to_f32(table.scales[g]), bf16_to_f32(table.biases[g]));
        ASSERT_EQ(y[t * 256 + c], want) << "tier " << tier << " t " << t << " c " << c;
      }
  }
}

TEST(embedding, NanInATableRowReachesOnlyTokensUsingIt) {
  QuantStorage table = random_quant(Rng(2), 8, 128, 4);
  table.scales[5 * 2 + 1] = 0x7FC0;  // row 5, second group
  const std::vector<int32_t> ids{5, 4, 5};
  for (int tier = 0; tier < 3; ++tier) {
    std::vector<float> y(3 * 128);
    run_tier(tier, {3, 8, 128, 4, 64}, table.view(), ids, y);
    for (int t = 0; t < 3; ++t)
      for (int c = 0; c < 128; ++c)
        EXPECT_EQ(std::isnan(y[t * 128 + c]), ids[t] == 5 && c >= 64) << "tier " << tier << " t " << t << " c " << c;
  }
}

TEST(embedding, OutOfRangeIdsAreErrors) {
  const QuantStorage table = random_quant(Rng(1), 248320, 64, 4);  // the real vocab, one group per row
  std::vector<int32_t> ids{0, 248319, 7, 248320};
  std::vector<float> y(4 * 64, 1.0f);
  const EmbeddingParams p{4, 248320, 64, 4, 64};
  for (int tier = 0; tier < 3; ++tier) {
    test::expect_error([&] { run_tier(tier, p, table.view(), ids, y); },
                       "embedding: token id 248320 at position 3 out of range [0, 248320)");
  }
  EXPECT_EQ(y, std::vector<float>(4 * 64, 1.0f));  // nothing written before the check
  ids[3] = 5, ids[1] = -1;
  test::expect_error([&] { embedding_fast(p, table.view(), ids, y); },
                     "embedding: token id -1 at position 1 out of range [0, 248320)");
  ids[1] = 248319;
  for (int tier = 0; tier < 3; ++tier) run_tier(tier, p, table.view(), ids, y);  // both ends are fine
}

TEST(embedding, BadArguments) {
  const QuantStorage table = random_quant(Rng(1), 10, 128, 4);
  const std::vector<int32_t> ids{1, 2};
  std::vector<float> y(256);
  test::expect_error([&] { embedding_ref<double>({2, 10, 128, 4, 64}, table.view(), ids, std::span<float>(y).first(100)); },
                     "embedding: y has 100 elements, expected 256");
  test::expect_error([&] { embedding_ref<float>({3, 10, 128, 4, 64}, table.view(), ids, y); },
                     "embedding: ids has 2 elements, expected 3");
  test::expect_error([&] { embedding_fast({2, 11, 128, 4, 64}, table.view(), ids, y); },
                     "embedding: table has shape [10, 128], expected [11, 128]");
  test::expect_error([&] { embedding_fast({2, 10, 128, 8, 64}, table.view(), ids, y); },
                     "embedding: table has bits=4 group_size=64, expected bits=8 group_size=64");
  test::expect_error([&] { embedding_fast({2, 0, 128, 4, 64}, table.view(), ids, y); }, "embedding: tokens=2 vocab=0");
}

TEST(embedding, ThreeWayAgreement) { test::expect_all_pass(embedding_check(1234, CheckScope::All)); }

}  // namespace
}  // namespace moe
