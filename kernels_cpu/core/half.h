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

}  // namespace moe
