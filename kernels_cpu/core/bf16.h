// bfloat16 <-> float32. A bf16 value is stored as its raw 16-bit pattern (uint16_t): the
// high half of the f32 with the same value (docs/ops/README.md "Scalar helpers").
#pragma once
#include <bit>
#include <cstdint>

namespace moe {

using bf16 = uint16_t;

// Exact: every bf16 is an f32.
inline float bf16_to_f32(bf16 u) { return std::bit_cast<float>(uint32_t(u) << 16); }

// Round to nearest, ties to even (MLX, PyTorch). NaN stays a quiet NaN of the same sign
// (the plain +0x7FFF trick could carry a NaN payload into Inf).
inline bf16 f32_to_bf16_rne(float f) {
  uint32_t b = std::bit_cast<uint32_t>(f);
  if ((b & 0x7FFFFFFFu) > 0x7F800000u) return bf16((b >> 16) | 0x0040u);
  b += 0x7FFFu + ((b >> 16) & 1u);
  return bf16(b >> 16);
}

// Truncation: keep the high 16 bits (the 2-bit expert requantiser, docs/ops/formats.md "2-bit requantisation").
// A NaN whose payload sits only in the low bits is kept a NaN.
inline bf16 f32_to_bf16_trunc(float f) {
  uint32_t b = std::bit_cast<uint32_t>(f);
  if ((b & 0x7FFFFFFFu) > 0x7F800000u) return bf16((b >> 16) | 0x0040u);
  return bf16(b >> 16);
}

}  // namespace moe
