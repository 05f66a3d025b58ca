// IEEE binary16 (f16) values, as ggml's block scales and engines' f16 dumps hold them.
#pragma once
#include <cmath>
#include <cstdint>

namespace moe {

// Exact: every f16 is a double. Sign, 5-bit exponent (bias 15), 10-bit fraction; exponent 0 is
// subnormal (f * 2^-24), 31 infinity or NaN.
inline double f16_to_double(uint16_t h) {
  const int sign = h >> 15, e = (h >> 10) & 31, f = h & 1023;
  double v;
  if (e == 0) v = std::ldexp(double(f), -24);
  else if (e == 31) v = f ? NAN : INFINITY;
  else v = std::ldexp(double(f | 1024), e - 25);
  return sign ? -v : v;
}

// The f16 nearest to v (ties to even; the current rounding mode, round-to-nearest by default),
// subnormals included; |v| >= 65520 gives infinity, NaN a quiet NaN.
inline uint16_t f16_from_double(double v) {
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  v = std::fabs(v);
  if (std::isnan(v)) return 0x7E00;
  if (v >= 65520.0) return sign | 0x7C00;
  if (v < 0x1.0p-14) return sign | uint16_t(std::nearbyint(v * 0x1.0p24));  // 1024 lands on the smallest normal
  int e;
  const double f = std::frexp(v, &e);       // v = f 2^e, f in [0.5, 1)
  double m = std::nearbyint(f * 2048.0);    // 11 significant bits, [1024, 2048]
  if (m == 2048.0) m = 1024.0, ++e;
  const int biased = e - 1 + 15;
  if (biased >= 31) return sign | 0x7C00;
  return sign | uint16_t(biased << 10) | uint16_t(int(m) - 1024);
}

}  // namespace moe
