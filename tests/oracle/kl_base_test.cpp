// llama.cpp's KL-divergence base file (oracle/kl_base.h): a record worked out by hand, a file read
// back as written, and files the reader must refuse.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

#include "core/check.h"
#include "oracle/kl_base.h"
#include "test_util.h"

namespace moe {
namespace {

TEST(KlBase, RecordByHand) {
  // Logits {0, 1, 2, -30} (4 values: 8 record words, no padding): max 2, the floor at 2 - 16 = -14
  // (-30 is below: code 0), scale 16 / 65535, min_log_prob = -14 - 2 - ln(e^-2 + e^-1 + 1 + e^-32).
  const std::vector<float> logits{0, 1, 2, -30};
  std::vector<uint16_t> rec(size_t(kl_base_record_words(4)));
  ASSERT_EQ(rec.size(), 8u);
  kl_base_record(logits, rec);
  float scale, mlp;
  std::memcpy(&scale, rec.data(), 4), std::memcpy(&mlp, rec.data() + 2, 4);
  EXPECT_EQ(scale, float(16.0 / 65535.0));
  const double lse = std::log(std::exp(-2.0) + std::exp(-1.0) + 1.0 + std::exp(-32.0));
  EXPECT_EQ(mlp, float(-16.0 - lse));
  EXPECT_EQ(rec[4], uint16_t(std::nearbyint(14.0 / double(scale))));
  EXPECT_EQ(rec[5], uint16_t(std::nearbyint(15.0 / double(scale))));
  EXPECT_EQ(rec[6], 65535);
  EXPECT_EQ(rec[7], 0);
  // Odd vocabularies pad the record to a whole number of 32-bit words.
  EXPECT_EQ(kl_base_record_words(5), 10);
}

TEST(KlBase, EqualLogitsGiveScaleZeroAndZeroCodes) {
  std::vector<uint16_t> rec(size_t(kl_base_record_words(3)), 7);
  kl_base_record(std::vector<float>{1.5f, 1.5f, 1.5f}, rec);
  float scale, mlp;
  std::memcpy(&scale, rec.data(), 4), std::memcpy(&mlp, rec.data() + 2, 4);
  EXPECT_EQ(scale, 0.0f);
  EXPECT_FLOAT_EQ(mlp, float(-std::log(3.0)));
  for (size_t i = 4; i < rec.size(); ++i) EXPECT_EQ(rec[i], 0) << i;
}

TEST(KlBase, WrittenFileReadsBack) {
  KlBaseFile f;
  f.n_ctx = 4, f.n_vocab = 3, f.n_chunk = 2;
  f.tokens = {0, 1, 2, 1, 2, 2, 0, 1};
  const int64_t nv = kl_base_record_words(3);  // 8 words, one of padding
  f.records.resize(size_t(2 * f.positions_per_chunk() * nv));
  for (int64_t r = 0; r < 2; ++r)
    kl_base_record(std::vector<float>{float(r), 0.5f, -1.0f}, std::span<uint16_t>(f.records).subspan(size_t(r * nv), size_t(nv)));
  const std::string path = ::testing::TempDir() + "kl_base_test.kld";
  write_kl_base(path, f);
  const KlBaseFile g = read_kl_base(path);
  EXPECT_EQ(g.n_ctx, 4);
  EXPECT_EQ(g.n_vocab, 3);
  EXPECT_EQ(g.n_chunk, 2);
  EXPECT_EQ(g.tokens, f.tokens);
  EXPECT_EQ(g.records, f.records);
  // ln p(1) of record 1 (logits {1, 0.5, -1}) within half a step of the exact value.
  const double exact = 0.5 - 1.0 - std::log(1.0 + std::exp(-0.5) + std::exp(-2.0));
  EXPECT_NEAR(g.log_prob(1, 1), exact, 2.0 / 65535 / 2 + 1e-6);
  std::remove(path.c_str());
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& b) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

TEST(KlBase, BadFilesAreRefusedWithTheReason) {
  const std::string path = ::testing::TempDir() + "kl_base_bad.kld";
  write_bytes(path, {'n', 'o', 't', ' ', 'a', ' ', 'k', 'l', 'd', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  test::expect_error([&] { read_kl_base(path); }, "expected the magic \"_logits_\"");
  std::vector<uint8_t> b{'_', 'l', 'o', 'g', 'i', 't', 's', '_', 4, 0, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0};
  write_bytes(path, b);  // the header alone: tokens and records missing
  test::expect_error([&] { read_kl_base(path); }, "20 bytes, the header (n_ctx 4, n_vocab 3, n_chunk 1) makes it 52");
  b[8] = 1;  // n_ctx 1
  write_bytes(path, b);
  test::expect_error([&] { read_kl_base(path); }, "expected n_ctx >= 2");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace moe
