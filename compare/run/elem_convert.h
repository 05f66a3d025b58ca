// Element types of a binding that differ from the op tensor's (docs/manifests.md "Type
// conversion into a binding"), and generated values (docs/manifests.md "Generated tensors"):
// every conversion is exact or refused, so the truth, computed from the op tensor's values,
// stays the truth of what the kernel reads.
//
// A unit is one element's bits in the low 16 or 32 bits of a uint32_t (bf16 and f16: 16 bits).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "compare/manifest/manifest.h"

namespace moe::compare {

// Bytes of one element in a buffer: 2 for bf16 and f16, 4 otherwise.
int elem_bytes(ElemType t);
// The fill of a buffer of type `t` where no view places an element: `poison` (the 32-bit NaN
// pattern) for 4-byte types and bf16, and the f16 quiet NaN 0x7EAD in both halves for f16 (the
// 32-bit pattern's low half, 0x0BAD, is a small normal f16 and would read as a plausible value).
uint32_t fill_pattern(ElemType t, uint32_t poison);
inline constexpr uint32_t kPoisonF16Pair = 0x7EAD7EADu;

// Whether op tensors of type `from` may be bound as `to` at all (bf16 -> f32 | f16, f32 -> f16,
// i32 <-> u32); each element is still checked by convert_exact.
bool convertible(ElemType from, ElemType to);
// `unit` of type `from` as type `to`, or nullopt when the value is not exactly representable
// (an f32 beyond f16's range or precision, a negative i32 as u32, a NaN).
std::optional<uint32_t> convert_exact(uint32_t unit, ElemType from, ElemType to);
// The value of `unit` of type `t`, for messages.
double unit_value(uint32_t unit, ElemType t);
// A generated value as type `t`: exact or an error naming `what` (an integer out of range or
// fractional, a float not exactly representable, a NaN; +-inf is exact in every float type).
uint32_t generated_unit(double v, ElemType t, const std::string& what);

}  // namespace moe::compare
