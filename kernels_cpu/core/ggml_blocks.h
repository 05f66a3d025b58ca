// ggml's block-quantized weight formats (GGUF tensor types; oracle/gguf.h names them), decoded to
// their exact values: the f64 truth of a GGUF tensor. Layouts (public facts of ggml's
// ggml-common.h), each block little-endian, f16 scales:
//   q4_0  32 values, 18 B: d, 16 B of nibbles; value j (< 16) the low nibble of byte j, j + 16 its
//         high nibble; w = d * (q - 8)
//   q4_1  32, 20 B: d, m, 16 B as q4_0; w = d * q + m
//   q5_0  32, 22 B: d, u32 qh, 16 B as q4_0; bit 4 of value j from qh bit j; w = d * (q - 16)
//   q5_1  32, 24 B: d, m, qh, 16 B; w = d * q + m
//   q8_0  32, 34 B: d, 32 int8; w = d * q
//   q4_K  256, 144 B: d, dmin, 12 B of eight 6-bit (scale, min) pairs, 128 B of nibbles; 64 values
//         per pair of sub-blocks: the low nibbles of 32 bytes (sub-block 2k), then their high
//         nibbles (2k + 1); w = d * sc * q - dmin * m
//   q6_K  256, 210 B: 128 B low nibbles, 64 B of 2-bit highs, 16 int8 scales, d; per 128 values
//         four rows of 32 from (low nibble, bits 0-1), (low of +32, bits 2-3), (high nibble, bits
//         4-5), (high of +32, bits 6-7); w = d * scale * (q - 32), scale per 16 values
//   q2_K, q3_K, q5_K, iq4_nl, iq4_xs: the byte and bit of each value at their decoders
//         (ggml_blocks.cpp); iq4 codes index a fixed grid of 16 integers
// ggml's own f32 dequantisation rounds at most once per value (an f16 times small integers fits
// f32 or takes one rounding; the k-quants with a min subtract two exact products), so this exact
// value rounded to f32 is ggml's value: seen equal on 4096 random blocks of each format against
// ggml's to_float (scripts/ggml_crosscheck/dequant_crosscheck.sh,
// records/runs/2026-12-06-gguf-container.md).
#pragma once
#include <cstdint>
#include <span>

namespace moe {

// A format this file decodes: its ggml type id, its name as ggml spells it, values and bytes per
// block, and where its f16 scale fields sit (f16_fields of them from byte f16_offset on, 2 bytes
// each: d, then dmin or m where the format has one).
struct GgmlBlockFormat {
  uint32_t type;
  const char* name;
  int64_t block;
  size_t block_bytes;
  int f16_offset;
  int f16_fields;
};

// The format of ggml type `type`, or nullptr when it is not decoded here.
const GgmlBlockFormat* ggml_block_format(uint32_t type);

// Whether ggml_dequant_f64 decodes ggml type `type` (f32, f16, bf16, f64 and the formats above).
bool ggml_dequant_supported(uint32_t type);

// `n` values (a multiple of the type's block) of ggml type `type` from `bytes`, exactly (for q4_1,
// q5_1, q2_K, q4_K and q5_K: exactly unless the two terms' exponents lie more than 2^32 apart, which f16
// scales of one block never do in a real model).
// Throws moe::Error for an unsupported type, a partial block or too few bytes.
void ggml_dequant_f64(uint32_t type, std::span<const uint8_t> bytes, int64_t n, double* out);

// The same values each rounded once to f32 (nearest, ties to even): ggml's own to_float, which
// rounds at most once per value (above). Same errors as ggml_dequant_f64.
void ggml_dequant_f32(uint32_t type, std::span<const uint8_t> bytes, int64_t n, float* out);

// The same values split as W = a + b: `a` the code times its scales (d q, d sc q, d sc grid[q]),
// `b` what does not depend on the code (q4_0 -8 d, q5_0 -16 d, q4_1 / q5_1 m, the k-quants'
// -dmin m, q6_K -32 d sc, q3_K -4 d sc; 0 for the others). Both are exact. A kernel may round a
// and b apart (d (sum q x) + m (sum x)), so the magnitude its roundings scale with is
// (|a| + |b|) |x|, not |W x| (kernels_cpu/spec/matvec_ggml_spec.h).
void ggml_dequant_parts(uint32_t type, std::span<const uint8_t> bytes, int64_t n, double* a, double* b);

}  // namespace moe
