#include "core/ggml_blocks.h"

#include <bit>
#include <cstring>

#include "core/bf16.h"
#include "core/check.h"
#include "core/half.h"

namespace moe {
namespace {

static_assert(std::endian::native == std::endian::little, "ggml blocks are read as little-endian words");

struct Format {
  uint32_t type;
  int64_t block;
  size_t block_bytes;
  void (*decode)(const uint8_t* b, double* w);  // one block
};

double f16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_double(h);
}

void f32_block(const uint8_t* b, double* w) {
  float f;
  std::memcpy(&f, b, 4);
  w[0] = f;
}
void f64_block(const uint8_t* b, double* w) { std::memcpy(w, b, 8); }
void f16_block(const uint8_t* b, double* w) { w[0] = f16_at(b); }
void bf16_block(const uint8_t* b, double* w) {
  bf16 h;
  std::memcpy(&h, b, 2);
  w[0] = bf16_to_f32(h);
}

// q4_0 / q4_1: 16 bytes of nibbles at `qs`; value j the low nibble of byte j, j + 16 the high one.
void nibbles(const uint8_t* qs, double d, double m, int offset, double* w) {
  for (int j = 0; j < 16; ++j) {
    w[j] = d * double((qs[j] & 0xF) - offset) + m;
    w[j + 16] = d * double((qs[j] >> 4) - offset) + m;
  }
}
void q4_0_block(const uint8_t* b, double* w) { nibbles(b + 2, f16_at(b), 0.0, 8, w); }
void q4_1_block(const uint8_t* b, double* w) { nibbles(b + 4, f16_at(b), f16_at(b + 2), 0, w); }

// q5_0 / q5_1: the nibbles at `qs` with bit 4 of value j from bit j of qh.
void fives(uint32_t qh, const uint8_t* qs, double d, double m, int offset, double* w) {
  for (int j = 0; j < 16; ++j) {
    const int lo = int(qs[j] & 0xF) | int((qh >> j) & 1u) << 4;
    const int hi = int(qs[j] >> 4) | int((qh >> (j + 16)) & 1u) << 4;
    w[j] = d * double(lo - offset) + m;
    w[j + 16] = d * double(hi - offset) + m;
  }
}
void q5_0_block(const uint8_t* b, double* w) {
  uint32_t qh;
  std::memcpy(&qh, b + 2, 4);
  fives(qh, b + 6, f16_at(b), 0.0, 16, w);
}
void q5_1_block(const uint8_t* b, double* w) {
  uint32_t qh;
  std::memcpy(&qh, b + 4, 4);
  fives(qh, b + 8, f16_at(b), f16_at(b + 2), 0, w);
}

void q8_0_block(const uint8_t* b, double* w) {
  const double d = f16_at(b);
  for (int j = 0; j < 32; ++j) w[j] = d * double(int8_t(b[2 + j]));
}

// q4_K's 6-bit (scale, min) of sub-block j from its 12 packed bytes: pairs 0-3 are the low six
// bits of bytes j and j + 4; pairs 4-7 take four bits from byte j + 4 and their top two from the
// top bits of bytes j - 4 (scale) and j (min).
void scale_min_k4(int j, const uint8_t* s, int& sc, int& m) {
  if (j < 4) {
    sc = s[j] & 63, m = s[j + 4] & 63;
  } else {
    sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
    m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// q4_K and q5_K: d, dmin, 12 scale bytes, then (q5_K only) 32 bytes of fifth bits `qh`, then 128
// bytes of nibbles `q`. 64 values per pair of sub-blocks: the low nibbles of 32 bytes (sub-block
// 2k, fifth bit 2k of qh[l]), then their high nibbles (2k + 1, bit 2k + 1).
void k4_block(const uint8_t* b, const uint8_t* qh, const uint8_t* q, double* w) {
  const double d = f16_at(b), dmin = f16_at(b + 2);
  for (int pair = 0; pair < 4; ++pair, q += 32, w += 64) {
    int sc0, m0, sc1, m1;
    scale_min_k4(2 * pair, b + 4, sc0, m0);
    scale_min_k4(2 * pair + 1, b + 4, sc1, m1);
    for (int l = 0; l < 32; ++l) {
      const int lo = (q[l] & 0xF) | (qh ? ((qh[l] >> (2 * pair)) & 1) << 4 : 0);
      const int hi = (q[l] >> 4) | (qh ? ((qh[l] >> (2 * pair + 1)) & 1) << 4 : 0);
      w[l] = d * sc0 * double(lo) - dmin * m0;
      w[l + 32] = d * sc1 * double(hi) - dmin * m1;
    }
  }
}
void q4_k_block(const uint8_t* b, double* w) { k4_block(b, nullptr, b + 16, w); }
void q5_k_block(const uint8_t* b, double* w) { k4_block(b, b + 16, b + 48, w); }

void q6_k_block(const uint8_t* b, double* w) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  const double d = f16_at(b + 208);
  for (int half = 0; half < 2; ++half, ql += 64, qh += 32, sc += 8, w += 128)
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q1 = (int(ql[l] & 0xF) | ((qh[l] >> 0) & 3) << 4) - 32;
      const int q2 = (int(ql[l + 32] & 0xF) | ((qh[l] >> 2) & 3) << 4) - 32;
      const int q3 = (int(ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32;
      const int q4 = (int(ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32;
      w[l] = d * sc[is] * q1;
      w[l + 32] = d * sc[is + 2] * q2;
      w[l + 64] = d * sc[is + 4] * q3;
      w[l + 96] = d * sc[is + 6] * q4;
    }
}

// q2_K: 16 scale bytes (low nibble scale, high nibble min), 64 bytes of 2-bit values, d, dmin.
// Per 128 values (32 bytes of qs): for each 2-bit position (shift 0, 2, 4, 6) 16 values from bytes
// 0-15, then 16 from bytes 16-31, each run with the next scale byte.
void q2_k_block(const uint8_t* b, double* w) {
  const uint8_t* scales = b;
  const double d = f16_at(b + 80), dmin = f16_at(b + 82);
  for (int h = 0; h < 2; ++h) {
    const uint8_t* q = b + 16 + 32 * h;
    for (int shift = 0; shift < 8; shift += 2)
      for (int part = 0; part < 2; ++part, ++scales, w += 16)
        for (int l = 0; l < 16; ++l)
          w[l] = d * (*scales & 0xF) * double((q[l + 16 * part] >> shift) & 3) - dmin * (*scales >> 4);
  }
}

// q3_K's 16 6-bit scales from 12 bytes: low four bits from the low (s < 8) or high nibble of byte
// s % 8, top two bits from byte 8 + s % 4 at bit 2 (s / 4).
int scale_k3(int s, const uint8_t* p) {
  const int low = s < 8 ? p[s] & 0xF : p[s - 8] >> 4;
  const int high = (p[8 + s % 4] >> (2 * (s / 4))) & 3;
  return (low | high << 4) - 32;
}

// q3_K: 32 bytes of high bits, 64 of 2-bit values, 12 of scales, d. Value order as q2_K's; the
// high bit of a value sits in hmask byte l (or l + 16) at bit (2-bit position + 4 h): set means
// q, clear means q - 4.
void q3_k_block(const uint8_t* b, double* w) {
  const uint8_t* hm = b;
  const double d = f16_at(b + 108);
  int s = 0, bit = 0;
  for (int h = 0; h < 2; ++h) {
    const uint8_t* q = b + 32 + 32 * h;
    for (int shift = 0; shift < 8; shift += 2, ++bit)
      for (int part = 0; part < 2; ++part, ++s, w += 16) {
        const double dl = d * scale_k3(s, b + 96);
        for (int l = 0; l < 16; ++l) {
          const int at = l + 16 * part;
          w[l] = dl * double(((q[at] >> shift) & 3) - ((hm[at] >> bit) & 1 ? 0 : 4));
        }
      }
  }
}

// The 16 values of iq4_nl's and iq4_xs's 4-bit codes (a fixed non-uniform grid of the format).
constexpr int kIq4Grid[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

void iq4_nl_block(const uint8_t* b, double* w) {
  const double d = f16_at(b);
  for (int j = 0; j < 16; ++j) w[j] = d * kIq4Grid[b[2 + j] & 0xF], w[j + 16] = d * kIq4Grid[b[2 + j] >> 4];
}

// iq4_xs: d, u16 of scale high bits, 4 bytes of scale low nibbles, 128 bytes of codes; 32 values
// per 6-bit scale ls (w = d (ls - 32) grid[code]), codes as iq4_nl's.
void iq4_xs_block(const uint8_t* b, double* w) {
  const double d = f16_at(b);
  uint16_t high;
  std::memcpy(&high, b + 2, 2);
  for (int k = 0; k < 8; ++k, w += 32) {
    const int ls = ((b[4 + k / 2] >> (4 * (k % 2))) & 0xF) | ((high >> (2 * k)) & 3) << 4;
    const double dl = d * (ls - 32);
    const uint8_t* q = b + 8 + 16 * k;
    for (int j = 0; j < 16; ++j) w[j] = dl * kIq4Grid[q[j] & 0xF], w[j + 16] = dl * kIq4Grid[q[j] >> 4];
  }
}

constexpr Format kFormats[] = {
    {0, 1, 4, f32_block},         {1, 1, 2, f16_block},         {30, 1, 2, bf16_block},       {28, 1, 8, f64_block},
    {2, 32, 18, q4_0_block},      {3, 32, 20, q4_1_block},      {6, 32, 22, q5_0_block},
    {7, 32, 24, q5_1_block},      {8, 32, 34, q8_0_block},      {12, 256, 144, q4_k_block},
    {14, 256, 210, q6_k_block},   {10, 256, 84, q2_k_block},    {11, 256, 110, q3_k_block},
    {13, 256, 176, q5_k_block},   {20, 32, 18, iq4_nl_block},   {23, 256, 136, iq4_xs_block},
};

const Format* format_of(uint32_t type) {
  for (const Format& f : kFormats)
    if (f.type == type) return &f;
  return nullptr;
}

}  // namespace

bool ggml_dequant_supported(uint32_t type) { return format_of(type) != nullptr; }

void ggml_dequant_f64(uint32_t type, std::span<const uint8_t> bytes, int64_t n, double* out) {
  const Format* f = format_of(type);
  MOE_CHECK(f, "ggml dequant: type " << type << " is not decoded here (f32, f16, bf16, f64, q4_0, q4_1, q5_0, q5_1, "
                                     << "q8_0, q2_K, q3_K, q4_K, q5_K, q6_K, iq4_nl, iq4_xs)");
  MOE_CHECK(n >= 0 && n % f->block == 0, "ggml dequant: " << n << " values, expected a multiple of the block of " << f->block);
  const uint64_t blocks = uint64_t(n / f->block);
  MOE_CHECK(bytes.size() >= blocks * f->block_bytes,
            "ggml dequant: " << n << " values need " << blocks * f->block_bytes << " bytes, " << bytes.size() << " given");
  for (uint64_t k = 0; k < blocks; ++k) f->decode(bytes.data() + k * f->block_bytes, out + k * uint64_t(f->block));
}

}  // namespace moe
