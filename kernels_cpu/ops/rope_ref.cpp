#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/math.h"
#include "ops/rope.h"

namespace moe {

void rope_validate(const RopeParams& p, std::span<const int64_t> positions, std::span<const float> x,
                   std::span<const float> y) {
  MOE_CHECK(p.tokens >= 0 && p.heads >= 0 && p.head_dim > 0,
            "rope: tokens=" << p.tokens << " heads=" << p.heads << " head_dim=" << p.head_dim
                            << ", expected tokens >= 0, heads >= 0, head_dim > 0");
  MOE_CHECK(p.rotary_dim > 0 && p.rotary_dim % 2 == 0 && p.rotary_dim <= p.head_dim,
            "rope: rotary_dim=" << p.rotary_dim << ", expected even and in [2, head_dim=" << p.head_dim << "]");
  // (float)(2i) and (float)R must be exact, as the f32 order assumes.
  MOE_CHECK(p.rotary_dim <= (int64_t(1) << 24), "rope: rotary_dim=" << p.rotary_dim << ", expected <= 2^24");
  MOE_CHECK(std::isfinite(p.theta) && p.theta > 0.0f, "rope: theta=" << p.theta << ", expected finite and > 0");
  rotary_validate_io("rope", p.tokens, p.heads, p.head_dim, "head_dim", positions, x, y);
}

void rotary_validate_io(const char* op, int64_t tokens, int64_t heads, int64_t dim, const char* dim_name,
                        std::span<const int64_t> positions, std::span<const float> x, std::span<const float> y) {
  const int64_t n = head_elements(op, tokens, heads, dim, dim_name);
  check_size(positions, tokens, op, "positions");
  check_size(x, n, op, "x");
  check_size(y, n, op, "y");
  for (int64_t t = 0; t < tokens; ++t)
    MOE_CHECK(positions[t] >= 0 && positions[t] < (int64_t(1) << 31),
              op << ": position " << positions[t] << " of token " << t << " out of range [0, 2^31)");
  MOE_CHECK(spans_same(x, y) || spans_disjoint(x, y),
            op << ": y partially overlaps x, expected the same buffer or disjoint ones");
}

template <class Acc>
void rope_ref(const RopeParams& p, std::span<const int64_t> positions, std::span<const float> x, std::span<float> y) {
  rope_validate(p, positions, x, y);
  const int64_t D = p.head_dim, R = p.rotary_dim, half = R / 2;
  for (int64_t t = 0; t < p.tokens; ++t) {
    const Acc pos = Acc(positions[t]);  // (float)pos in the f32 tier
    for (int64_t i = 0; i < half; ++i) {
      // Acc = float: 1 / powf(theta, (float)(2i) / (float)R), (float)pos * inv_freq, cosf, sinf.
      const Acc inv_freq = Acc(1) / std::pow(Acc(p.theta), Acc(2 * i) / Acc(R));
      const Acc angle = pos * inv_freq;
      const Acc c = std::cos(angle), s = std::sin(angle);
      for (int64_t h = 0; h < p.heads; ++h) {
        const int64_t base = (t * p.heads + h) * D;
        const Acc x1 = Acc(x[base + i]), x2 = Acc(x[base + i + half]);
        y[base + i] = float(x1 * c - x2 * s);
        y[base + i + half] = float(x1 * s + x2 * c);
      }
    }
    // The tail [R, D) is data movement: bytes copied, NaN payloads and all (memmove: y may be x).
    if (R < D && y.data() != x.data())
      for (int64_t h = 0; h < p.heads; ++h) {
        const int64_t base = (t * p.heads + h) * D;
        std::memmove(y.data() + base + R, x.data() + base + R, sizeof(float) * (D - R));
      }
  }
}

template void rope_ref<float>(const RopeParams&, std::span<const int64_t>, std::span<const float>, std::span<float>);
template void rope_ref<double>(const RopeParams&, std::span<const int64_t>, std::span<const float>,
                               std::span<float>);

}  // namespace moe
