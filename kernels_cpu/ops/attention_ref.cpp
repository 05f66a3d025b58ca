#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "core/math.h"
#include "core/softmax.h"
#include "ops/attention.h"

namespace moe {
namespace {

// a * b without signed overflow (UB); the validation rejects shapes whose sizes do not fit.
int64_t checked_mul(int64_t a, int64_t b, const char* what) {
  int64_t r = 0;
  MOE_CHECK(!__builtin_mul_overflow(a, b, &r), "attention: " << what << " overflows int64 (" << a << " * " << b << ")");
  return r;
}

// Scores of G heads against cache rows [0, len): s[j * len + pos] = (fma chain over d ascending
// of qt[d * G + j] * K[pos][d]) * scale. std::fma is exactly rounded whichever way it is done,
// so the clones (hardware FMA where the CPU has it, libm's fma otherwise) give identical bits;
// the clone only avoids a libm call per multiply-add.
// (x86 only: 64-bit ARM always has FMA.) Not under ThreadSanitizer: GCC 12 and clang 14 both instrument
// the clones' IFUNC resolver, which the dynamic loader runs before TSan's runtime exists (a crash
// at start-up, docs/sanitizers.md); the one plain function gives the same bits.
#if defined(__SANITIZE_THREAD__)
#define MOE_NO_IFUNC 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MOE_NO_IFUNC 1
#endif
#endif
#if (defined(__x86_64__) || defined(__i386__)) && !defined(MOE_NO_IFUNC)
#define MOE_FMA_CLONES __attribute__((target_clones("fma", "default")))
#else
#define MOE_FMA_CLONES
#endif
template <class Acc>
inline void scores_body(const Acc* __restrict qt, const float* kc, int64_t row, int64_t len, int64_t D, int64_t G,
                        Acc scale, Acc* __restrict dot, Acc* __restrict s) {
  for (int64_t pos = 0; pos < len; ++pos) {
    const float* kr = kc + pos * row;
    for (int64_t j = 0; j < G; ++j) dot[j] = Acc(0);
    for (int64_t d = 0; d < D; ++d) {
      const Acc kd = Acc(kr[d]);
      for (int64_t j = 0; j < G; ++j) dot[j] = std::fma(qt[d * G + j], kd, dot[j]);
    }
    for (int64_t j = 0; j < G; ++j) s[j * len + pos] = dot[j] * scale;
  }
}
MOE_FMA_CLONES void scores(const float* qt, const float* kc, int64_t row, int64_t len, int64_t D, int64_t G,
                           float scale, float* dot, float* s) {
  scores_body(qt, kc, row, len, D, G, scale, dot, s);
}
MOE_FMA_CLONES void scores(const double* qt, const float* kc, int64_t row, int64_t len, int64_t D, int64_t G,
                           double scale, double* dot, double* s) {
  scores_body(qt, kc, row, len, D, G, scale, dot, s);
}

}  // namespace

void attention_validate(const AttentionParams& p, std::span<const float> q, std::span<const float> gate,
                        std::span<const float> k, std::span<const float> v, std::span<float> k_cache,
                        std::span<float> v_cache, std::span<float> o) {
  MOE_CHECK(p.tokens >= 0 && p.q_heads > 0 && p.kv_heads > 0 && p.head_dim > 0,
            "attention: tokens=" << p.tokens << " q_heads=" << p.q_heads << " kv_heads=" << p.kv_heads
                                 << " head_dim=" << p.head_dim
                                 << ", expected tokens >= 0 and q_heads, kv_heads, head_dim > 0");
  MOE_CHECK(p.q_heads % p.kv_heads == 0, "attention: q_heads=" << p.q_heads << " is not a multiple of kv_heads="
                                                                << p.kv_heads << " (GQA needs H % Hkv == 0)");
  check_cache_window("attention", p.past, p.tokens, p.capacity);
  MOE_CHECK(std::isfinite(p.scale) && p.scale >= 0.0f,
            "attention: scale=" << p.scale << ", expected finite and >= 0 (0 = 1/sqrt(head_dim))");
  const int64_t q_size = checked_mul(checked_mul(p.tokens, p.q_heads, "tokens*q_heads"), p.head_dim, "q size");
  const int64_t kv_row = checked_mul(p.kv_heads, p.head_dim, "kv_heads*head_dim");
  const int64_t kv_size = checked_mul(p.tokens, kv_row, "k size");
  const int64_t cache_size = checked_mul(p.capacity, kv_row, "cache size");
  check_size(q, q_size, "attention", "q");
  check_size(gate, q_size, "attention", "gate");
  check_size(k, kv_size, "attention", "k");
  check_size(v, kv_size, "attention", "v");
  check_size(k_cache, cache_size, "attention", "k_cache");
  check_size(v_cache, cache_size, "attention", "v_cache");
  check_size(o, q_size, "attention", "o");
  // The append writes the caches before anything is read, and o is written while q, gate and the
  // caches are still being read: overlapping buffers would silently change the result.
  const std::span<const float> kc(k_cache), vc(v_cache), out(o);
  MOE_CHECK(!spans_overlap(kc, vc), "attention: k_cache and v_cache overlap");
  for (auto [name, in] : {std::pair{"q", q}, std::pair{"gate", gate}, std::pair{"k", k}, std::pair{"v", v}}) {
    MOE_CHECK(!spans_overlap(in, kc) && !spans_overlap(in, vc), "attention: " << name << " overlaps a cache (the append would change it)");
    MOE_CHECK(!spans_overlap(in, out), "attention: o overlaps " << name);
  }
  MOE_CHECK(!spans_overlap(out, kc) && !spans_overlap(out, vc), "attention: o overlaps a cache");
}

template <class Acc>
void attention_ref(const AttentionParams& p, std::span<const float> q, std::span<const float> gate,
                   std::span<const float> k, std::span<const float> v, std::span<float> k_cache,
                   std::span<float> v_cache, std::span<float> o) {
  attention_validate(p, q, gate, k, v, k_cache, v_cache, o);
  const int64_t T = p.tokens, H = p.q_heads, Hkv = p.kv_heads, D = p.head_dim;
  const int64_t G = H / Hkv;    // query heads per kv head
  const int64_t row = Hkv * D;  // floats per cache row (one position)

  // 1. Append all T rows first (exact copies); token t then reads only rows < past + t + 1.
  std::copy(k.begin(), k.end(), k_cache.begin() + p.past * row);
  std::copy(v.begin(), v.end(), v_cache.begin() + p.past * row);
  if (T == 0) return;

  // f32: 1/sqrtf(D) as the engines; f64: 1/sqrt(D).
  const Acc scale = p.scale != 0.0f ? Acc(p.scale) : Acc(1) / std::sqrt(Acc(D));
  const int64_t max_len = p.past + T;
  std::vector<Acc> s(G * max_len);  // scores, then weights, of the G heads of one kv head
  std::vector<Acc> qt(D * G), dot(G), acc(G * D);

  // The loops visit each cache row once for all G heads sharing it; every head's own
  // operations happen in exactly the engines' order (d ascending in the dot, p ascending in the
  // output), the interleaving across heads changes no result.
  for (int64_t t = 0; t < T; ++t) {
    const int64_t len = p.past + t + 1;
    for (int64_t g = 0; g < Hkv; ++g) {
      // The G heads of kv head g are consecutive; qt[d * G + j] = q[t][g * G + j][d] (exact).
      const float* qg = q.data() + (t * H + g * G) * D;
      for (int64_t j = 0; j < G; ++j)
        for (int64_t d = 0; d < D; ++d) qt[d * G + j] = Acc(qg[j * D + d]);
      // 2. Scores: fma over d ascending from 0, then times scale.
      scores(qt.data(), k_cache.data() + g * D, row, len, D, G, scale, dot.data(), s.data());
      // 3. Softmax (docs/ops/README.md "Scalar helpers"): max by strict >, exp stored while summing in
      // order, times 1/sum.
      for (int64_t j = 0; j < G; ++j) softmax_in_place(s.data() + j * len, len);
      // 4. Output: oh[d] += P[p] * v[d] (product rounded, then the add), p ascending.
      std::fill(acc.begin(), acc.end(), Acc(0));
      for (int64_t pos = 0; pos < len; ++pos) {
        const float* vr = v_cache.data() + pos * row + g * D;
        for (int64_t j = 0; j < G; ++j) {
          const Acc w = s[j * len + pos];
          Acc* __restrict aj = acc.data() + j * D;
          for (int64_t d = 0; d < D; ++d) aj[d] += w * Acc(vr[d]);
        }
      }
      // 5. Gate: o * (1 / (1 + exp(-g))) per lane.
      for (int64_t j = 0; j < G; ++j) {
        const int64_t base = (t * H + g * G + j) * D;
        for (int64_t d = 0; d < D; ++d)
          o[base + d] = float(acc[j * D + d] * sigmoid(Acc(gate[base + d])));
      }
    }
  }
}

template void attention_ref<float>(const AttentionParams&, std::span<const float>, std::span<const float>,
                                   std::span<const float>, std::span<const float>, std::span<float>,
                                   std::span<float>, std::span<float>);
template void attention_ref<double>(const AttentionParams&, std::span<const float>, std::span<const float>,
                                    std::span<const float>, std::span<const float>, std::span<float>,
                                    std::span<float>, std::span<float>);

}  // namespace moe
