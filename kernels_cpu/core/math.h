// Scalar helpers shared by every tier, templated on the arithmetic type T (float = the
// engines' f32 forms, double = the truth). Forms follow spec/ops.md §3: silu and sigmoid in
// the division form the engines use, softplus as log(1 + exp(u)).
#pragma once
#include <cmath>
#include <cstdint>
#include <span>
#include <string_view>

#include "core/check.h"

namespace moe {

template <class T> inline T sigmoid(T x) { return T(1) / (T(1) + std::exp(-x)); }
template <class T> inline T silu(T x) { return x / (T(1) + std::exp(-x)); }
template <class T> inline T softplus(T u) { return std::log(T(1) + std::exp(u)); }

// Size check used at every op entry.
template <class S>
inline void check_size(const S& s, int64_t expected, std::string_view op, std::string_view what) {
  MOE_CHECK(int64_t(s.size()) == expected,
            op << ": " << what << " has " << s.size() << " elements, expected " << expected);
}
template <class S>
inline void check_min_size(const S& s, int64_t expected, std::string_view op, std::string_view what) {
  MOE_CHECK(int64_t(s.size()) >= expected,
            op << ": " << what << " has " << s.size() << " elements, expected at least " << expected);
}

}  // namespace moe
