// bf16 <-> f32 conversions of core/bf16.h: exact widening, round-to-nearest-even and truncation,
// with the special values (NaN, Inf, +-0, subnormals) spelled out bit by bit.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>

#include "core/bf16.h"
#include "core/rng.h"

namespace moe {
namespace {

float f(uint32_t bits) { return std::bit_cast<float>(bits); }

TEST(bf16, WideningIsExact) {
  EXPECT_EQ(bf16_to_f32(0x3F80), 1.0f);
  EXPECT_EQ(bf16_to_f32(0xBF80), -1.0f);
  EXPECT_EQ(bf16_to_f32(0x4049), 3.140625f);  // 0x40490000: pi truncated to 8 significant bits
  EXPECT_EQ(bf16_to_f32(0x7F80), INFINITY);
  EXPECT_EQ(bf16_to_f32(0xFF80), -INFINITY);
  EXPECT_TRUE(std::isnan(bf16_to_f32(0x7FC0)));
  EXPECT_EQ(std::bit_cast<uint32_t>(bf16_to_f32(0x8000)), 0x80000000u);  // -0 keeps its sign
  EXPECT_EQ(bf16_to_f32(0x0001), std::ldexp(1.0f, -133));                // smallest bf16 subnormal
  EXPECT_EQ(bf16_to_f32(0x7F7F), f(0x7F7F0000u));                        // largest finite bf16
}

TEST(bf16, RneTiesToEven) {
  // 1 + 2^-8 lies halfway between 0x3F80 (even) and 0x3F81: down to even.
  EXPECT_EQ(f32_to_bf16_rne(f(0x3F808000u)), 0x3F80);
  // 1 + 3*2^-8 lies halfway between 0x3F81 and 0x3F82 (even): up to even.
  EXPECT_EQ(f32_to_bf16_rne(f(0x3F818000u)), 0x3F82);
  // One f32 ulp either side of a tie decides it.
  EXPECT_EQ(f32_to_bf16_rne(f(0x3F808001u)), 0x3F81);
  EXPECT_EQ(f32_to_bf16_rne(f(0x3F807FFFu)), 0x3F80);
  // Negative values round on magnitude the same way.
  EXPECT_EQ(f32_to_bf16_rne(f(0xBF818000u)), 0xBF82);
  EXPECT_EQ(f32_to_bf16_rne(f(0xBF808000u)), 0xBF80);
}

TEST(bf16, RneCarriesIntoTheExponent) {
  // 0x3FFF is odd; the tie above it rounds up to 0x4000 = 2.0, carrying into the exponent.
  EXPECT_EQ(f32_to_bf16_rne(f(0x3FFF8000u)), 0x4000);
  EXPECT_EQ(bf16_to_f32(f32_to_bf16_rne(f(0x3FFFC000u))), 2.0f);
  // The largest f32 subnormal rounds up to the smallest normal bf16.
  EXPECT_EQ(f32_to_bf16_rne(f(0x007FFFFFu)), 0x0080);
}

TEST(bf16, RneOverflowsToInfinity) {
  EXPECT_EQ(f32_to_bf16_rne(f(0x7F7FFFFFu)), 0x7F80);  // FLT_MAX is above the last bf16 tie
  EXPECT_EQ(f32_to_bf16_rne(f(0xFF7FFFFFu)), 0xFF80);
  EXPECT_EQ(f32_to_bf16_rne(f(0x7F7F8000u)), 0x7F80);  // tie above odd 0x7F7F: up, to Inf
  EXPECT_EQ(f32_to_bf16_rne(f(0x7F7F7FFFu)), 0x7F7F);  // just below the tie: largest finite
}

TEST(bf16, TruncationDropsTheLowHalf) {
  EXPECT_EQ(f32_to_bf16_trunc(f(0x3F81FFFFu)), 0x3F81);
  EXPECT_EQ(f32_to_bf16_trunc(f(0x3FFFFFFFu)), 0x3FFF);  // no carry
  EXPECT_EQ(f32_to_bf16_trunc(f(0xBFFFFFFFu)), 0xBFFF);  // towards zero for negatives too
  EXPECT_EQ(f32_to_bf16_trunc(f(0x7F7FFFFFu)), 0x7F7F);  // FLT_MAX stays finite
  EXPECT_EQ(f32_to_bf16_trunc(f(0x3F2AAAABu)), 0x3F2A);  // 2/3: RNE would give 0x3F2B
  EXPECT_EQ(f32_to_bf16_rne(f(0x3F2AAAABu)), 0x3F2B);
}

TEST(bf16, NanStaysNan) {
  // Quiet NaN, a NaN whose payload is only in the low half (would truncate to Inf), the all-ones
  // NaN (the plain +0x7FFF trick would carry it into -0), and negative NaNs keep their sign.
  for (uint32_t bits : {0x7FC00000u, 0x7F800001u, 0x7FFFFFFFu, 0xFFFFFFFFu, 0xFF800001u, 0x7FBFFFFFu}) {
    const uint16_t r = f32_to_bf16_rne(f(bits)), t = f32_to_bf16_trunc(f(bits));
    EXPECT_TRUE(std::isnan(bf16_to_f32(r))) << std::hex << bits;
    EXPECT_TRUE(std::isnan(bf16_to_f32(t))) << std::hex << bits;
    EXPECT_EQ(r >> 15, bits >> 31) << std::hex << bits;
    EXPECT_EQ(t >> 15, bits >> 31) << std::hex << bits;
  }
}

TEST(bf16, SignedZeroAndInfinity) {
  for (auto conv : {f32_to_bf16_rne, f32_to_bf16_trunc}) {
    EXPECT_EQ(conv(0.0f), 0x0000);
    EXPECT_EQ(conv(-0.0f), 0x8000);
    EXPECT_EQ(conv(INFINITY), 0x7F80);
    EXPECT_EQ(conv(-INFINITY), 0xFF80);
  }
}

TEST(bf16, Subnormals) {
  // f32 subnormals keep the same bit layout: the tie between 0 and the smallest bf16 subnormal
  // goes to even (0), the next tie up to even (0x0002).
  EXPECT_EQ(f32_to_bf16_rne(f(0x00008000u)), 0x0000);
  EXPECT_EQ(f32_to_bf16_rne(f(0x00008001u)), 0x0001);
  EXPECT_EQ(f32_to_bf16_rne(f(0x00018000u)), 0x0002);
  EXPECT_EQ(f32_to_bf16_rne(f(0x80018000u)), 0x8002);
  EXPECT_EQ(f32_to_bf16_trunc(f(0x0000FFFFu)), 0x0000);
  EXPECT_EQ(f32_to_bf16_trunc(f(0x007FFFFFu)), 0x007F);
}

TEST(bf16, EveryBf16RoundTrips) {
  for (uint32_t u = 0; u <= 0xFFFF; ++u) {
    const float x = bf16_to_f32(bf16(u));
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16_rne(x))));
      continue;
    }
    ASSERT_EQ(f32_to_bf16_rne(x), u) << std::hex << u;
    ASSERT_EQ(f32_to_bf16_trunc(x), u) << std::hex << u;
  }
}

TEST(bf16, RneIsNearestOnRandomFloats) {
  // Independent of the bit trick: the RNE result is the nearer of the two bf16 values around x
  // (measured in f64, exact here), the even one on a tie; truncation is the one towards zero.
  Rng rng(11);
  for (int i = 0; i < 200000; ++i) {
    const float x = f(rng.next_u32());
    if (!std::isfinite(x)) continue;
    const uint16_t t = f32_to_bf16_trunc(x), r = f32_to_bf16_rne(x);
    ASSERT_LE(std::fabs(bf16_to_f32(t)), std::fabs(x));
    const uint16_t up = uint16_t(t + 1);  // next bf16 away from zero; past the largest it is Inf,
    // which IEEE rounding treats as 2^128 (so FLT_MAX rounds to Inf)
    const double upv = std::isinf(bf16_to_f32(up)) ? std::copysign(0x1p128, x) : bf16_to_f32(up);
    const double dt = std::fabs(double(x) - bf16_to_f32(t)), du = std::fabs(upv - x);
    const uint16_t want = dt < du ? t : du < dt ? up : ((t & 1) ? up : t);
    ASSERT_EQ(r, want) << std::hex << std::bit_cast<uint32_t>(x);
  }
}

}  // namespace
}  // namespace moe
