// Scalar helpers shared by every tier, templated on the arithmetic type T (float = the
// engines' f32 forms, double = the truth). Forms follow docs/ops/README.md "Scalar helpers": silu and sigmoid in
// the division form the engines use, softplus as log(1 + exp(u)).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <span>
#include <string_view>

#include "core/check.h"

namespace moe {

// Terms (rows x columns x tokens) from which a reference matvec spreads its rows over OpenMP
// threads: below ~1 M terms (a millisecond of scalar work) starting threads costs more than it saves.
inline constexpr int64_t kRefThreadTerms = int64_t(1) << 20;
// Rows per block a thread takes (a block is summed row by row, as one thread would).
inline constexpr int64_t kRefRowBlock = 16;

// f(r0, r1) over [0, rows) in blocks of kRefRowBlock rows, on OpenMP threads when the call has at
// least kRefThreadTerms terms. For references whose rows are independent and each summed by one
// call of f in its own order: threads change the speed, never the bits. f runs in OpenMP's
// outlined body, which does not inherit a caller's target attribute: an FMA build belongs inside f.
template <class F>
void ref_row_blocks(int64_t rows, int64_t terms, F f) {
  const int64_t blocks = (rows + kRefRowBlock - 1) / kRefRowBlock;
#pragma omp parallel for schedule(static) if (terms >= kRefThreadTerms)
  for (int64_t b = 0; b < blocks; ++b) f(b * kRefRowBlock, std::min(rows, (b + 1) * kRefRowBlock));
}

template <class T> inline T sigmoid(T x) { return T(1) / (T(1) + std::exp(-x)); }
template <class T> inline T silu(T x) { return x / (T(1) + std::exp(-x)); }
template <class T> inline T softplus(T u) { return std::log(T(1) + std::exp(u)); }

// tokens * heads * dim of a per-head op, or an error naming the op and the three sizes (dim as
// `dim_name`) when the product overflows int64.
inline int64_t head_elements(std::string_view op, int64_t tokens, int64_t heads, int64_t dim,
                             std::string_view dim_name) {
  int64_t n = 0;
  MOE_CHECK(!__builtin_mul_overflow(tokens, heads, &n) && !__builtin_mul_overflow(n, dim, &n),
            op << ": tokens*heads*" << dim_name << " overflows int64 (tokens=" << tokens << " heads=" << heads << " "
               << dim_name << "=" << dim << ")");
  return n;
}

// A per-head norm's sizes and eps (qk_norm, rmsnorm_gated): head_dim <= 2^24 keeps (float)head_dim
// exact, as the f32 order and the bound assume. Returns tokens * heads * head_dim.
inline int64_t head_norm_elements(std::string_view op, int64_t tokens, int64_t heads, int64_t head_dim, float eps) {
  MOE_CHECK(tokens >= 0 && heads >= 0 && head_dim > 0 && head_dim <= (int64_t(1) << 24),
            op << ": tokens=" << tokens << " heads=" << heads << " head_dim=" << head_dim
               << ", expected tokens >= 0, heads >= 0, 0 < head_dim <= 2^24");
  MOE_CHECK(eps >= 0.0f && std::isfinite(eps), op << ": eps=" << eps << ", expected finite and >= 0");
  return head_elements(op, tokens, heads, head_dim, "head_dim");
}

// The cache window of an attention call: past >= 0 rows already cached, tokens new ones
// appended after them, all within capacity rows. past <= capacity - tokens cannot overflow.
inline void check_cache_window(std::string_view op, int64_t past, int64_t tokens, int64_t capacity) {
  MOE_CHECK(past >= 0 && capacity >= 0, op << ": past=" << past << " capacity=" << capacity << ", expected both >= 0");
  MOE_CHECK(tokens <= capacity && past <= capacity - tokens,
            op << ": past + tokens = " << past << " + " << tokens << " exceeds the cache capacity " << capacity
               << " rows");
}

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

// Buffer aliasing rules of the ops: an output may be exactly one of its inputs (in place) or
// disjoint from it; a partial overlap would make the result depend on the loop order.
// std::less gives a total order on pointers into unrelated arrays.
inline bool spans_overlap(std::span<const float> a, std::span<const float> b) {
  if (a.empty() || b.empty()) return false;
  const std::less<const float*> lt;
  return lt(a.data(), b.data() + b.size()) && lt(b.data(), a.data() + a.size());
}
inline bool spans_disjoint(std::span<const float> a, std::span<const float> b) { return !spans_overlap(a, b); }
inline bool spans_same(std::span<const float> a, std::span<const float> b) {
  return a.data() == b.data() && a.size() == b.size();
}

}  // namespace moe
