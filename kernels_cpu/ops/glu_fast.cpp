#include <algorithm>
#include <cmath>

#include "ops/glu.h"

namespace moe {

// The f32 forms of ops/glu.h over chunks of elements: one exp (or erf) an element, a few ns, so
// threads pay off from 2^20 elements (64 chunks: a 57-token prefill at DeepSeek-V3's dense
// width); a decode row of a few thousand takes microseconds, less than one fork/join.
void glu_fast(const GluParams& p, std::span<const float> gate, std::span<const float> up, std::span<float> y) {
  glu_validate(p, gate, up, y);
  const int64_t n = int64_t(y.size());
  constexpr int64_t kChunk = 1 << 14;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  const GluAct act = GluAct(p.act);
#pragma omp parallel for schedule(static) if (chunks >= 64)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t i0 = c * kChunk, i1 = std::min(n, i0 + kChunk);
    const float* g = gate.data();
    const float* u = up.data();
    float* o = y.data();
    if (act == GluAct::Silu) {
      for (int64_t i = i0; i < i1; ++i) o[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
    } else if (act == GluAct::GeluTanh) {
      for (int64_t i = i0; i < i1; ++i) {
        const float v = kGeluTanhC * g[i] * (1.0f + kGeluTanhK * g[i] * g[i]);
        o[i] = 0.5f * g[i] * (2.0f - 2.0f / (std::exp(2.0f * v) + 1.0f)) * u[i];
      }
    } else {
      for (int64_t i = i0; i < i1; ++i) o[i] = 0.5f * g[i] * (1.0f + std::erf(g[i] * kInvSqrt2)) * u[i];
    }
  }
}

}  // namespace moe
