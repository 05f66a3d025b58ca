#include "compare/run/elem_convert.h"

#include <bit>
#include <cmath>
#include <limits>

#include "core/check.h"
#include "core/half.h"

namespace moe::compare {

namespace {

// IEEE binary16 of `v` rounded to nearest even, or nullopt when the rounded value overflows
// (|v| >= 65520) or v is a NaN. Scaling by a power of two is exact, so nearbyint (round to
// nearest even in the default mode) rounds once.
std::optional<uint32_t> f16_round(double v) {
  if (std::isnan(v)) return std::nullopt;
  const uint32_t sign = std::signbit(v) ? 0x8000u : 0u;
  const double a = std::fabs(v);
  if (std::isinf(a)) return sign | 0x7C00u;
  if (a < std::ldexp(1.0, -14)) return sign | uint32_t(std::nearbyint(std::ldexp(a, 24)));  // 1024 = the smallest normal
  int ex = 0;
  std::frexp(a, &ex);                   // a = m * 2^ex, m in [0.5, 1): exponent ex - 1
  int e = ex - 1;
  double q = std::nearbyint(std::ldexp(a, 10 - e));  // in [1024, 2048]
  if (q == 2048) q = 1024, ++e;
  if (e > 15) return std::nullopt;
  return sign | uint32_t(e + 15) << 10 | (uint32_t(q) - 1024u);
}


// `v` as an f16 only when that is exact.
std::optional<uint32_t> f16_exact(double v) {
  const auto h = f16_round(v);
  if (!h || f16_to_double(uint16_t(*h)) != v) return std::nullopt;
  return h;
}

}  // namespace

int elem_bytes(ElemType t) { return t == ElemType::BF16 || t == ElemType::F16 ? 2 : 4; }

uint32_t fill_pattern(ElemType t, uint32_t poison) { return t == ElemType::F16 ? kPoisonF16Pair : poison; }

bool convertible(ElemType from, ElemType to) {
  if (from == to) return true;
  if (from == ElemType::BF16) return to == ElemType::F32 || to == ElemType::F16;
  if (from == ElemType::F32) return to == ElemType::F16;
  return (from == ElemType::I32 && to == ElemType::U32) || (from == ElemType::U32 && to == ElemType::I32);
}

double unit_value(uint32_t unit, ElemType t) {
  switch (t) {
    case ElemType::F32: return double(std::bit_cast<float>(unit));
    case ElemType::BF16: return double(std::bit_cast<float>(unit << 16));
    case ElemType::F16: return f16_to_double(uint16_t(unit));
    case ElemType::U32: return double(unit);
    case ElemType::I32: return double(std::bit_cast<int32_t>(unit));
  }
  return 0;
}

std::optional<uint32_t> convert_exact(uint32_t unit, ElemType from, ElemType to) {
  if (from == to) return unit;
  if (!convertible(from, to)) return std::nullopt;
  if (from == ElemType::BF16 && to == ElemType::F32) return unit << 16;  // always exact
  if (to == ElemType::F16) return f16_exact(unit_value(unit, from));     // NaN: not exact
  if (from == ElemType::I32) return std::bit_cast<int32_t>(unit) >= 0 ? std::optional<uint32_t>(unit) : std::nullopt;
  return unit <= 0x7FFFFFFFu ? std::optional<uint32_t>(unit) : std::nullopt;  // u32 -> i32
}

uint32_t generated_unit(double v, ElemType t, const std::string& what) {
  std::optional<uint32_t> u;
  switch (t) {
    case ElemType::U32:
    case ElemType::I32: return to_bits(v, elem_type_name(t), what);
    case ElemType::F32:
      if (!std::isnan(v) && !(std::isfinite(v) && std::fabs(v) > std::numeric_limits<float>::max()) && double(float(v)) == v) u = std::bit_cast<uint32_t>(float(v));
      break;
    case ElemType::BF16:
      if (!std::isnan(v) && !(std::isfinite(v) && std::fabs(v) > std::numeric_limits<float>::max()) && double(float(v)) == v && (std::bit_cast<uint32_t>(float(v)) & 0xFFFFu) == 0)
        u = std::bit_cast<uint32_t>(float(v)) >> 16;
      break;
    case ElemType::F16: u = f16_exact(v); break;
  }
  MOE_CHECK(u, what << " = " << format_value(v) << " is not exactly representable in " << elem_type_name(t)
                    << " (generated values are exact: round the expression, e.g. with integer arithmetic)");
  return *u;
}

}  // namespace moe::compare
