#include <cmath>
#include <numbers>
#include <type_traits>

#include "core/math.h"
#include "ops/glu.h"

namespace moe {

void glu_validate(const GluParams& p, std::span<const float> gate, std::span<const float> up,
                  std::span<const float> y) {
  MOE_CHECK(p.rows >= 0 && p.n >= 0, "glu: rows=" << p.rows << " n=" << p.n << ", expected both >= 0");
  MOE_CHECK(p.act >= 0 && p.act <= 2,
            "glu: act=" << p.act << ", expected 0 (SiLU), 1 (GELU, tanh approximation) or 2 (GELU, erf)");
  int64_t count = 0;
  MOE_CHECK(!__builtin_mul_overflow(p.rows, p.n, &count),
            "glu: rows*n overflows int64 (rows=" << p.rows << " n=" << p.n << ")");
  check_size(gate, count, "glu", "gate");
  check_size(up, count, "glu", "up");
  check_size(y, count, "glu", "y");
  MOE_CHECK((spans_same(y, gate) || spans_disjoint(y, gate)) && (spans_same(y, up) || spans_disjoint(y, up)),
            "glu: y partially overlaps gate or up, expected y on gate, on up, or disjoint");
}

namespace {

// act(g) * u in the f32 order of ops/glu.h (Acc = float) or the truth's forms (Acc = double).
template <class Acc>
Acc glu_one(GluAct act, Acc g, Acc u) {
  if (act == GluAct::Silu) return silu(g) * u;
  if constexpr (std::is_same_v<Acc, float>) {
    if (act == GluAct::GeluTanh) {
      const float v = kGeluTanhC * g * (1.0f + kGeluTanhK * g * g);
      return 0.5f * g * (2.0f - 2.0f / (std::exp(2.0f * v) + 1.0f)) * u;
    }
    return 0.5f * g * (1.0f + std::erf(g * kInvSqrt2)) * u;
  } else {
    if (act == GluAct::GeluTanh) {
      const double v = std::sqrt(2.0 / std::numbers::pi) * (g + 0.044715 * g * g * g);
      return 0.5 * g * (2.0 / (1.0 + std::exp(-2.0 * v))) * u;
    }
    return 0.5 * g * std::erfc(-g / std::numbers::sqrt2) * u;
  }
}

}  // namespace

template <class Acc>
void glu_ref(const GluParams& p, std::span<const float> gate, std::span<const float> up, std::span<float> y) {
  glu_validate(p, gate, up, y);
  const GluAct act = GluAct(p.act);
  for (size_t i = 0; i < y.size(); ++i) y[i] = float(glu_one<Acc>(act, Acc(gate[i]), Acc(up[i])));
}

template void glu_ref<float>(const GluParams&, std::span<const float>, std::span<const float>, std::span<float>);
template void glu_ref<double>(const GluParams&, std::span<const float>, std::span<const float>, std::span<float>);

}  // namespace moe
