// Exactly computable quantized cases (matvec_q, matmul_q): every bias 0, the scales of odd groups
// 1, of even groups 1 + 2^-7 (bf16 0x3F81), and x one-hot per token (x = 1 at a column of an odd
// group, 1 or 3 of the 4; 0 elsewhere). Every value any correct evaluation can form (q s, q s + b,
// s x, b x, W x, any partial sum, in any order, fused or not) is 0, an integer of magnitude
// < 2^8, or (even groups, times x = 0 after) q (1 + 2^-7) with a 16-bit significand: exact in
// f32 (< 2^24, no bits below 2^-7 q); Vulkan's add, mul and fma are correctly rounded, so they
// are exact on these values and every conforming kernel returns the truth exactly: bound 0 is a
// derivation, not a guess. It reaches sub-rounding errors the gamma bounds must allow: a scale of
// an odd group read with the even neighbour's low bit leaking into its mantissa (the even
// scale's bf16 bit 0 is set: 1 + 2^-23 instead of 1, and y moves by at least one ulp wherever
// q >= 1), a weight rounded twice. Odd groups: bf16 element g sits in the high half of word
// g / 2 (4 groups per row, so g and the group index have the same parity).
#pragma once
#include <vector>

#include "core/bf16.h"
#include "core/quant.h"
#include "core/rng.h"
#include "core/test_data.h"

namespace moe::compare {

inline constexpr int64_t kExactCols = 256;  // 4 groups of 64

// W [rows, 256]: random codes, the scales and biases above.
inline QuantStorage exact_quant_weights(Rng rng, int64_t rows, int bits) {
  QuantStorage W = random_quant(rng, rows, kExactCols, bits, 64);
  for (size_t g = 0; g < W.scales.size(); ++g) W.scales[g] = bf16(g % 2 == 0 ? 0x3F81u : 0x3F80u);  // 1 + 2^-7, 1
  for (auto& bi : W.biases) bi = f32_to_bf16_rne(0.0f);
  return W;
}

// x [tokens, 256]: per token one 1 in an odd group.
inline std::vector<float> exact_quant_inputs(Rng rng, int64_t tokens) {
  std::vector<float> x(static_cast<size_t>(tokens * kExactCols), 0.0f);
  for (int64_t t = 0; t < tokens; ++t)
    x[size_t(t * kExactCols + 64 * (1 + 2 * int64_t(rng.below(2))) + int64_t(rng.below(64)))] = 1.0f;
  return x;
}

}  // namespace moe::compare
