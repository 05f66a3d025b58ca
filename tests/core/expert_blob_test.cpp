#include "core/expert_blob.h"

#include <array>
#include <vector>

#include "test_util.h"

namespace moe {
namespace {

using Offsets = std::array<int64_t, 10>;

TEST(expert_blob, A17B4BitOffsetsAndSize) {
  // docs/ops/formats.md "Packed experts": 0, 2097152, 2228224, 2359296, 4456448, 4587520, 4718592, 6815744, 6946816.
  EXPECT_EQ(expert_blob_offsets(4096, 1024, 4),
            (Offsets{0, 2097152, 2228224, 2359296, 4456448, 4587520, 4718592, 6815744, 6946816, 7077888}));
  EXPECT_EQ(expert_blob_bytes(4096, 1024, 4), 7077888);
}

TEST(expert_blob, A3B4BitOffsetsAndSize) {
  EXPECT_EQ(expert_blob_offsets(2048, 512, 4),
            (Offsets{0, 524288, 557056, 589824, 1114112, 1146880, 1179648, 1703936, 1736704, 1769472}));
  EXPECT_EQ(expert_blob_bytes(2048, 512, 4), 1769472);
}

TEST(expert_blob, TwoBitOffsetsAndSizes) {
  EXPECT_EQ(expert_blob_offsets(4096, 1024, 2),
            (Offsets{0, 1048576, 1179648, 1310720, 2359296, 2490368, 2621440, 3670016, 3801088, 3932160}));
  EXPECT_EQ(expert_blob_bytes(2048, 512, 2), 983040);  // docs/ops/models.md "Derived sizes", A3B 2-bit
}

// Round trip: pack -> from_blob gives views whose bytes equal the source, at the offsets of
// docs/ops/formats.md "Packed experts", and packing the views again reproduces the blob byte for byte.
void round_trip(int64_t d, int64_t inter, int bits) {
  const ExpertStorage src = random_expert(Rng(11, uint64_t(bits)), d, inter, bits);
  const std::vector<uint8_t> blob = pack_expert_blob(src.view());
  ASSERT_EQ(int64_t(blob.size()), expert_blob_bytes(d, inter, bits));
  const ExpertWeights e = expert_from_blob(blob.data(), blob.size(), d, inter, bits);
  const Offsets off = expert_blob_offsets(d, inter, bits);
  const QuantStorage* s[3] = {&src.gate, &src.up, &src.down};
  const QuantMatrix* m[3] = {&e.gate, &e.up, &e.down};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(reinterpret_cast<const uint8_t*>(m[i]->w), blob.data() + off[3 * i]);
    EXPECT_EQ(reinterpret_cast<const uint8_t*>(m[i]->scales), blob.data() + off[3 * i + 1]);
    EXPECT_EQ(reinterpret_cast<const uint8_t*>(m[i]->biases), blob.data() + off[3 * i + 2]);
    EXPECT_EQ(m[i]->rows, s[i]->rows);
    EXPECT_EQ(m[i]->cols, s[i]->cols);
    EXPECT_EQ(m[i]->bits, bits);
    EXPECT_EQ(m[i]->group_size, 64);
    EXPECT_EQ(std::vector<uint32_t>(m[i]->w, m[i]->w + m[i]->weight_words()), s[i]->w);
    EXPECT_EQ(std::vector<bf16>(m[i]->scales, m[i]->scales + m[i]->scale_count()), s[i]->scales);
    EXPECT_EQ(std::vector<bf16>(m[i]->biases, m[i]->biases + m[i]->scale_count()), s[i]->biases);
  }
  EXPECT_EQ(pack_expert_blob(e), blob);
}

TEST(expert_blob, RoundTripSmall) {
  for (int bits : {2, 4, 8}) round_trip(128, 64, bits);
}
TEST(expert_blob, RoundTripA3B) { round_trip(2048, 512, 4); }
TEST(expert_blob, RoundTripA17B2Bit) { round_trip(4096, 1024, 2); }

TEST(expert_blob, BadArguments) {
  std::vector<uint32_t> words(expert_blob_bytes(128, 64, 4) / 4 + 1);
  const uint8_t* p = reinterpret_cast<const uint8_t*>(words.data());
  const size_t n = expert_blob_bytes(128, 64, 4);
  EXPECT_NO_THROW(expert_from_blob(p, n, 128, 64, 4));
  test::expect_error([&] { expert_from_blob(p, n - 4, 128, 64, 4); },
                     "expert_from_blob: blob has 13820 bytes, expected 13824");
  test::expect_error([&] { expert_from_blob(p + 2, n, 128, 64, 4); }, "not 4-byte aligned");
  test::expect_error([&] { expert_from_blob(nullptr, n, 128, 64, 4); }, "blob is null");
  test::expect_error([&] { expert_from_blob(p, n, 128, 64, 3); }, "bits=3, expected 2, 4 or 8");
  test::expect_error([&] { expert_blob_bytes(100, 64, 4); }, "hidden=100 inter=64");
  test::expect_error([&] { expert_blob_bytes(128, 0, 4); }, "hidden=128 inter=0");

  ExpertStorage a = random_expert(Rng(1), 128, 64, 4);
  ExpertWeights bad = a.view();
  std::swap(bad.gate, bad.down);  // gate [d, I]: transposed shapes
  test::expect_error([&] { pack_expert_blob(bad); }, "expected gate/up [I, d] and down [d, I]");
  ExpertStorage b = random_expert(Rng(1), 128, 64, 2);
  ExpertWeights mixed = a.view();
  mixed.down = b.view().down;
  test::expect_error([&] { pack_expert_blob(mixed); }, "bits 4/4/2");
}

}  // namespace
}  // namespace moe
