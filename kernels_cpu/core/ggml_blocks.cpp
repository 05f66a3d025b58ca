#include "core/ggml_blocks.h"

#include <bit>
#include <cstring>

#include "core/bf16.h"
#include "core/check.h"
#include "core/half.h"

namespace moe {
namespace {

static_assert(std::endian::native == std::endian::little, "ggml blocks are read as little-endian words");

// One block's values as W = a + b (ggml_blocks.h): `a` the code times its scales, `b` the
// code-independent offset.
using Decode = void (*)(const uint8_t* blk, double* a, double* b);

struct Format {
  GgmlBlockFormat info;
  Decode decode;
};

double f16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_double(h);
}

void f32_block(const uint8_t* blk, double* a, double* b) {
  float f;
  std::memcpy(&f, blk, 4);
  a[0] = f, b[0] = 0;
}
void f64_block(const uint8_t* blk, double* a, double* b) { std::memcpy(a, blk, 8), b[0] = 0; }
void f16_block(const uint8_t* blk, double* a, double* b) { a[0] = f16_at(blk), b[0] = 0; }
void bf16_block(const uint8_t* blk, double* a, double* b) {
  bf16 h;
  std::memcpy(&h, blk, 2);
  a[0] = bf16_to_f32(h), b[0] = 0;
}

// q4_0 / q4_1: 16 bytes of nibbles at `qs`; value j the low nibble of byte j, j + 16 the high one.
// W = d q + off (off = -8 d for q4_0, m for q4_1).
void nibbles(const uint8_t* qs, double d, double off, double* a, double* b) {
  for (int j = 0; j < 16; ++j) {
    a[j] = d * double(qs[j] & 0xF), a[j + 16] = d * double(qs[j] >> 4);
    b[j] = b[j + 16] = off;
  }
}
void q4_0_block(const uint8_t* blk, double* a, double* b) { nibbles(blk + 2, f16_at(blk), -8 * f16_at(blk), a, b); }
void q4_1_block(const uint8_t* blk, double* a, double* b) { nibbles(blk + 4, f16_at(blk), f16_at(blk + 2), a, b); }

// q5_0 / q5_1: the nibbles at `qs` with bit 4 of value j from bit j of qh; off = -16 d or m.
void fives(uint32_t qh, const uint8_t* qs, double d, double off, double* a, double* b) {
  for (int j = 0; j < 16; ++j) {
    const int lo = int(qs[j] & 0xF) | int((qh >> j) & 1u) << 4;
    const int hi = int(qs[j] >> 4) | int((qh >> (j + 16)) & 1u) << 4;
    a[j] = d * double(lo), a[j + 16] = d * double(hi);
    b[j] = b[j + 16] = off;
  }
}
void q5_0_block(const uint8_t* blk, double* a, double* b) {
  uint32_t qh;
  std::memcpy(&qh, blk + 2, 4);
  fives(qh, blk + 6, f16_at(blk), -16 * f16_at(blk), a, b);
}
void q5_1_block(const uint8_t* blk, double* a, double* b) {
  uint32_t qh;
  std::memcpy(&qh, blk + 4, 4);
  fives(qh, blk + 8, f16_at(blk), f16_at(blk + 2), a, b);
}

void q8_0_block(const uint8_t* blk, double* a, double* b) {
  const double d = f16_at(blk);
  for (int j = 0; j < 32; ++j) a[j] = d * double(int8_t(blk[2 + j])), b[j] = 0;
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
// 2k, fifth bit 2k of qh[l]), then their high nibbles (2k + 1, bit 2k + 1). W = d sc q - dmin m.
void k4_block(const uint8_t* blk, const uint8_t* qh, const uint8_t* q, double* a, double* b) {
  const double d = f16_at(blk), dmin = f16_at(blk + 2);
  for (int pair = 0; pair < 4; ++pair, q += 32, a += 64, b += 64) {
    int sc0, m0, sc1, m1;
    scale_min_k4(2 * pair, blk + 4, sc0, m0);
    scale_min_k4(2 * pair + 1, blk + 4, sc1, m1);
    for (int l = 0; l < 32; ++l) {
      const int lo = (q[l] & 0xF) | (qh ? ((qh[l] >> (2 * pair)) & 1) << 4 : 0);
      const int hi = (q[l] >> 4) | (qh ? ((qh[l] >> (2 * pair + 1)) & 1) << 4 : 0);
      a[l] = d * sc0 * double(lo), b[l] = -dmin * m0;
      a[l + 32] = d * sc1 * double(hi), b[l + 32] = -dmin * m1;
    }
  }
}
void q4_k_block(const uint8_t* blk, double* a, double* b) { k4_block(blk, nullptr, blk + 16, a, b); }
void q5_k_block(const uint8_t* blk, double* a, double* b) { k4_block(blk, blk + 16, blk + 48, a, b); }

// q6_K: W = d sc (q - 32), q the unsigned 6-bit code: a = d sc q, b = -32 d sc.
void q6_k_block(const uint8_t* blk, double* a, double* b) {
  const uint8_t* ql = blk;
  const uint8_t* qh = blk + 128;
  const int8_t* sc = reinterpret_cast<const int8_t*>(blk + 192);
  const double d = f16_at(blk + 208);
  for (int half = 0; half < 2; ++half, ql += 64, qh += 32, sc += 8, a += 128, b += 128)
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q[4] = {int(ql[l] & 0xF) | ((qh[l] >> 0) & 3) << 4, int(ql[l + 32] & 0xF) | ((qh[l] >> 2) & 3) << 4,
                        int(ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4, int(ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4};
      for (int k = 0; k < 4; ++k) {
        const double ds = d * sc[is + 2 * k];
        a[l + 32 * k] = ds * q[k], b[l + 32 * k] = -32 * ds;
      }
    }
}

// q2_K: 16 scale bytes (low nibble scale, high nibble min), 64 bytes of 2-bit values, d, dmin.
// Per 128 values (32 bytes of qs): for each 2-bit position (shift 0, 2, 4, 6) 16 values from bytes
// 0-15, then 16 from bytes 16-31, each run with the next scale byte. W = d sc q - dmin m.
void q2_k_block(const uint8_t* blk, double* a, double* b) {
  const uint8_t* scales = blk;
  const double d = f16_at(blk + 80), dmin = f16_at(blk + 82);
  for (int h = 0; h < 2; ++h) {
    const uint8_t* q = blk + 16 + 32 * h;
    for (int shift = 0; shift < 8; shift += 2)
      for (int part = 0; part < 2; ++part, ++scales, a += 16, b += 16)
        for (int l = 0; l < 16; ++l) {
          a[l] = d * (*scales & 0xF) * double((q[l + 16 * part] >> shift) & 3);
          b[l] = -dmin * (*scales >> 4);
        }
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
// q, clear means q - 4. As a + b with the 3-bit code q + 4 h: a = dl (q + 4 h), b = -4 dl (the
// larger of the two splits kernels use, so the bound covers either).
void q3_k_block(const uint8_t* blk, double* a, double* b) {
  const uint8_t* hm = blk;
  const double d = f16_at(blk + 108);
  int s = 0, bit = 0;
  for (int h = 0; h < 2; ++h) {
    const uint8_t* q = blk + 32 + 32 * h;
    for (int shift = 0; shift < 8; shift += 2, ++bit)
      for (int part = 0; part < 2; ++part, ++s, a += 16, b += 16) {
        const double dl = d * scale_k3(s, blk + 96);
        for (int l = 0; l < 16; ++l) {
          const int at = l + 16 * part;
          a[l] = dl * double(((q[at] >> shift) & 3) + ((hm[at] >> bit) & 1 ? 4 : 0));
          b[l] = -4 * dl;
        }
      }
  }
}

// The 16 values of iq4_nl's and iq4_xs's 4-bit codes (a fixed non-uniform grid of the format).
constexpr int kIq4Grid[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

void iq4_nl_block(const uint8_t* blk, double* a, double* b) {
  const double d = f16_at(blk);
  for (int j = 0; j < 16; ++j) {
    a[j] = d * kIq4Grid[blk[2 + j] & 0xF], a[j + 16] = d * kIq4Grid[blk[2 + j] >> 4];
    b[j] = b[j + 16] = 0;
  }
}

// iq4_xs: d, u16 of scale high bits, 4 bytes of scale low nibbles, 128 bytes of codes; 32 values
// per 6-bit scale ls (w = d (ls - 32) grid[code]), codes as iq4_nl's.
void iq4_xs_block(const uint8_t* blk, double* a, double* b) {
  const double d = f16_at(blk);
  uint16_t high;
  std::memcpy(&high, blk + 2, 2);
  for (int k = 0; k < 8; ++k, a += 32, b += 32) {
    const int ls = ((blk[4 + k / 2] >> (4 * (k % 2))) & 0xF) | ((high >> (2 * k)) & 3) << 4;
    const double dl = d * (ls - 32);
    const uint8_t* q = blk + 8 + 16 * k;
    for (int j = 0; j < 16; ++j) {
      a[j] = dl * kIq4Grid[q[j] & 0xF], a[j + 16] = dl * kIq4Grid[q[j] >> 4];
      b[j] = b[j + 16] = 0;
    }
  }
}

// {type, name, values per block, bytes per block, f16 fields {offset, count}}
constexpr Format kFormats[] = {
    {{0, "f32", 1, 4, 0, 0}, f32_block},          {{1, "f16", 1, 2, 0, 0}, f16_block},
    {{30, "bf16", 1, 2, 0, 0}, bf16_block},       {{28, "f64", 1, 8, 0, 0}, f64_block},
    {{2, "q4_0", 32, 18, 0, 1}, q4_0_block},      {{3, "q4_1", 32, 20, 0, 2}, q4_1_block},
    {{6, "q5_0", 32, 22, 0, 1}, q5_0_block},      {{7, "q5_1", 32, 24, 0, 2}, q5_1_block},
    {{8, "q8_0", 32, 34, 0, 1}, q8_0_block},      {{10, "q2_K", 256, 84, 80, 2}, q2_k_block},
    {{11, "q3_K", 256, 110, 108, 1}, q3_k_block}, {{12, "q4_K", 256, 144, 0, 2}, q4_k_block},
    {{13, "q5_K", 256, 176, 0, 2}, q5_k_block},   {{14, "q6_K", 256, 210, 208, 1}, q6_k_block},
    {{20, "iq4_nl", 32, 18, 0, 1}, iq4_nl_block}, {{23, "iq4_xs", 256, 136, 0, 1}, iq4_xs_block},
};

const Format* format_of(uint32_t type) {
  for (const Format& f : kFormats)
    if (f.info.type == type) return &f;
  return nullptr;
}

const Format& checked_format(uint32_t type, std::span<const uint8_t> bytes, int64_t n) {
  const Format* f = format_of(type);
  MOE_CHECK(f, "ggml dequant: type " << type << " is not decoded here (f32, f16, bf16, f64, q4_0, q4_1, q5_0, q5_1, "
                                     << "q8_0, q2_K, q3_K, q4_K, q5_K, q6_K, iq4_nl, iq4_xs)");
  MOE_CHECK(n >= 0 && n % f->info.block == 0,
            "ggml dequant: " << n << " values of " << f->info.name << ", expected a multiple of its block of "
                             << f->info.block);
  const uint64_t need = uint64_t(n / f->info.block) * f->info.block_bytes;
  MOE_CHECK(bytes.size() >= need, "ggml dequant: " << n << " values of " << f->info.name << " need " << need
                                                   << " bytes, " << bytes.size() << " given");
  return *f;
}

}  // namespace

bool ggml_dequant_supported(uint32_t type) { return format_of(type) != nullptr; }

const GgmlBlockFormat* ggml_block_format(uint32_t type) {
  const Format* f = format_of(type);
  return f ? &f->info : nullptr;
}

void ggml_dequant_parts(uint32_t type, std::span<const uint8_t> bytes, int64_t n, double* a, double* b) {
  const Format& f = checked_format(type, bytes, n);
  const int64_t blocks = n / f.info.block;
  for (int64_t k = 0; k < blocks; ++k)
    f.decode(bytes.data() + k * int64_t(f.info.block_bytes), a + k * f.info.block, b + k * f.info.block);
}

namespace {

// Each value a + b (exact in f64), stored as T: the exact value, or it rounded once to f32.
template <class T>
void dequant_sum(uint32_t type, std::span<const uint8_t> bytes, int64_t n, T* out) {
  const Format& f = checked_format(type, bytes, n);
  double a[256], b[256];
  const int64_t blocks = n / f.info.block;
  for (int64_t k = 0; k < blocks; ++k) {
    f.decode(bytes.data() + k * int64_t(f.info.block_bytes), a, b);
    for (int64_t j = 0; j < f.info.block; ++j) out[k * f.info.block + j] = T(a[j] + b[j]);
  }
}

}  // namespace

void ggml_dequant_f64(uint32_t type, std::span<const uint8_t> bytes, int64_t n, double* out) {
  dequant_sum(type, bytes, n, out);
}

void ggml_dequant_f32(uint32_t type, std::span<const uint8_t> bytes, int64_t n, float* out) {
  dequant_sum(type, bytes, n, out);
}

}  // namespace moe
