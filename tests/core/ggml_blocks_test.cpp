// ggml block formats (core/ggml_blocks.h): blocks packed here element by element from the
// documented layout (value index -> byte and bit), decoded, and compared with the values the
// packer was given: the decoder's loops and the packer's placement are written independently.
// The cross-check against ggml's own dequantisation needs a ggml checkout:
// scripts/ggml_crosscheck/dequant_crosscheck.sh (records/runs/2026-12-06-gguf-container.md).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/check.h"
#include "core/ggml_blocks.h"

namespace moe {
namespace {

void put_f16(std::vector<uint8_t>& b, size_t at, uint16_t h) { std::memcpy(b.data() + at, &h, 2); }
// f16 bit patterns of a few exact values.
constexpr uint16_t kOne = 0x3C00, kHalf = 0x3800, kMinusQuarter = 0xB400, kTwo = 0x4000;

// Sets bits [bit, bit + width) of the block's bytes to v.
void put_bits(std::vector<uint8_t>& b, size_t byte, int bit, int width, int v) {
  for (int k = 0; k < width; ++k) {
    const int at = bit + k;
    if ((v >> k) & 1) b[byte + size_t(at / 8)] |= uint8_t(1u << (at % 8));
  }
}

// q4_K's and q5_K's 12 scale bytes at byte 4: sub-blocks 0-3 in the low 6 bits of bytes 0-3
// (scale) and 4-7 (min); 4-7 keep their low 4 bits in bytes 8-11 (scale low nibble, min high
// nibble) and their top 2 bits in the top bits of bytes 0-3 (scale) and 4-7 (min).
void put_k4_scales(std::vector<uint8_t>& b, const std::vector<int>& sc, const std::vector<int>& mn) {
  for (int k = 0; k < 4; ++k) {
    put_bits(b, 4 + size_t(k), 0, 6, sc[k]), put_bits(b, 8 + size_t(k), 0, 6, mn[k]);
    put_bits(b, 12 + size_t(k), 0, 4, sc[k + 4] & 15), put_bits(b, 12 + size_t(k), 4, 4, mn[k + 4] & 15);
    put_bits(b, 4 + size_t(k), 6, 2, sc[k + 4] >> 4), put_bits(b, 8 + size_t(k), 6, 2, mn[k + 4] >> 4);
  }
}

std::vector<double> decode(uint32_t type, const std::vector<uint8_t>& b, int64_t n) {
  std::vector<double> w(static_cast<size_t>(n));
  ggml_dequant_f64(type, b, n, w.data());
  return w;
}

TEST(GgmlBlocks, Q4AndQ5AndQ8FromTheirLayout) {
  std::mt19937 rng(7);
  std::vector<int> q(32);
  for (int& v : q) v = int(rng() % 32);
  // q4_0: value j < 16 in the low nibble of byte 2 + j, value j >= 16 in the high nibble of byte 2 + j - 16.
  std::vector<uint8_t> b(18, 0);
  put_f16(b, 0, kHalf);
  for (int j = 0; j < 32; ++j) put_bits(b, 2 + size_t(j % 16), j < 16 ? 0 : 4, 4, q[j] & 15);
  std::vector<double> w = decode(2, b, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(w[j], 0.5 * ((q[j] & 15) - 8)) << "q4_0 " << j;
  // q4_1: d, m, then the nibbles.
  b.assign(20, 0);
  put_f16(b, 0, kTwo), put_f16(b, 2, kMinusQuarter);
  for (int j = 0; j < 32; ++j) put_bits(b, 4 + size_t(j % 16), j < 16 ? 0 : 4, 4, q[j] & 15);
  w = decode(3, b, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(w[j], 2.0 * (q[j] & 15) - 0.25) << "q4_1 " << j;
  // q5_0: bit 4 of value j is bit j of the u32 after d.
  b.assign(22, 0);
  put_f16(b, 0, kOne);
  for (int j = 0; j < 32; ++j) {
    put_bits(b, 6 + size_t(j % 16), j < 16 ? 0 : 4, 4, q[j] & 15);
    put_bits(b, 2, j, 1, q[j] >> 4);
  }
  w = decode(6, b, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(w[j], double(q[j] - 16)) << "q5_0 " << j;
  // q5_1: d, m, qh, nibbles.
  b.assign(24, 0);
  put_f16(b, 0, kHalf), put_f16(b, 2, kOne);
  for (int j = 0; j < 32; ++j) {
    put_bits(b, 8 + size_t(j % 16), j < 16 ? 0 : 4, 4, q[j] & 15);
    put_bits(b, 4, j, 1, q[j] >> 4);
  }
  w = decode(7, b, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(w[j], 0.5 * q[j] + 1.0) << "q5_1 " << j;
  // q8_0: int8 after d.
  b.assign(34, 0);
  put_f16(b, 0, kMinusQuarter);
  for (int j = 0; j < 32; ++j) b[2 + size_t(j)] = uint8_t(int8_t(q[j] * 8 - 128));
  w = decode(8, b, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(w[j], -0.25 * (q[j] * 8 - 128)) << "q8_0 " << j;
}

TEST(GgmlBlocks, Q4KFromItsLayout) {
  std::mt19937 rng(11);
  std::vector<int> q(256), sc(8), mn(8);
  for (int& v : q) v = int(rng() % 16);
  for (int k = 0; k < 8; ++k) sc[k] = int(rng() % 64), mn[k] = int(rng() % 64);
  std::vector<uint8_t> b(144, 0);
  put_f16(b, 0, kHalf), put_f16(b, 2, kMinusQuarter);
  put_k4_scales(b, sc, mn);
  // Value i: sub-block s = i / 32; byte 16 + 32 * (s / 2) + i % 32; low nibble for even s.
  for (int i = 0; i < 256; ++i) {
    const int s = i / 32;
    put_bits(b, 16 + size_t(32 * (s / 2) + i % 32), s % 2 ? 4 : 0, 4, q[i]);
  }
  const std::vector<double> w = decode(12, b, 256);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(w[i], 0.5 * sc[i / 32] * q[i] + 0.25 * mn[i / 32]) << i;
}

TEST(GgmlBlocks, Q6KFromItsLayout) {
  std::mt19937 rng(13);
  std::vector<int> q(256), sc(16);
  for (int& v : q) v = int(rng() % 64);
  for (int& v : sc) v = int(rng() % 256) - 128;
  std::vector<uint8_t> b(210, 0);
  // Value i: half h = i / 128, r = i % 128, row = r / 32, l = r % 32. Its low 4 bits: byte
  // 64 h + l + 32 (row % 2), nibble row / 2; its high 2 bits: byte 128 + 32 h + l, bits 2 row.
  for (int i = 0; i < 256; ++i) {
    const int h = i / 128, r = i % 128, row = r / 32, l = r % 32;
    put_bits(b, size_t(64 * h + l + 32 * (row % 2)), 4 * (row / 2), 4, q[i] & 15);
    put_bits(b, 128 + size_t(32 * h + l), 2 * row, 2, q[i] >> 4);
  }
  for (int k = 0; k < 16; ++k) b[192 + size_t(k)] = uint8_t(int8_t(sc[k]));
  put_f16(b, 208, kMinusQuarter);
  const std::vector<double> w = decode(14, b, 256);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(w[i], -0.25 * sc[i / 16] * (q[i] - 32)) << i;
}

// q5_K is q4_K with a fifth bit per value: sub-block s takes bit s of qh byte (i % 32).
TEST(GgmlBlocks, Q5KFromItsLayout) {
  std::mt19937 rng(17);
  std::vector<int> q(256), sc(8), mn(8);
  for (int& v : q) v = int(rng() % 32);
  for (int k = 0; k < 8; ++k) sc[k] = int(rng() % 64), mn[k] = int(rng() % 64);
  std::vector<uint8_t> b(176, 0);
  put_f16(b, 0, kTwo), put_f16(b, 2, kHalf);
  put_k4_scales(b, sc, mn);
  for (int i = 0; i < 256; ++i) {
    const int s = i / 32;
    put_bits(b, 48 + size_t(32 * (s / 2) + i % 32), s % 2 ? 4 : 0, 4, q[i] & 15);
    put_bits(b, 16 + size_t(i % 32), s, 1, q[i] >> 4);
  }
  const std::vector<double> w = decode(13, b, 256);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(w[i], 2.0 * sc[i / 32] * q[i] - 0.5 * mn[i / 32]) << i;
}

// iq4_nl: 4-bit codes into the format's grid of 16 integers, placed as q4_0's nibbles.
TEST(GgmlBlocks, Iq4NlFromItsLayout) {
  const int grid[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
  std::vector<uint8_t> b(18, 0);
  put_f16(b, 0, kHalf);
  for (int j = 0; j < 32; ++j) put_bits(b, 2 + size_t(j % 16), j < 16 ? 0 : 4, 4, (j * 5) % 16);
  const std::vector<double> w = decode(20, b, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(w[j], 0.5 * grid[(j * 5) % 16]) << j;
}

TEST(GgmlBlocks, FloatsAndErrors) {
  std::vector<uint8_t> b(4);
  const float f = -3.75f;
  std::memcpy(b.data(), &f, 4);
  EXPECT_EQ(decode(0, b, 1)[0], -3.75);
  put_f16(b, 0, 0x0001);  // the smallest f16 subnormal
  EXPECT_EQ(decode(1, b, 1)[0], std::ldexp(1.0, -24));
  b = {0x80, 0x3F};  // bf16 1.0
  EXPECT_EQ(decode(30, b, 1)[0], 1.0);
  EXPECT_THROW(decode(2, std::vector<uint8_t>(18), 16), Error);   // a partial block
  EXPECT_THROW(decode(2, std::vector<uint8_t>(17), 32), Error);   // too few bytes
  EXPECT_THROW(decode(16, std::vector<uint8_t>(66), 256), Error);  // iq2_xxs: not decoded here
  EXPECT_FALSE(ggml_dequant_supported(16));
  EXPECT_TRUE(ggml_dequant_supported(12));
}

}  // namespace
}  // namespace moe
