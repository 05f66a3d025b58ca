#include <algorithm>
#include <cmath>
#include <vector>

#include "core/eigen.h"
#include "ops/attention.h"

namespace moe {
namespace {

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using CacheBlock = Eigen::Map<const RowMat, 0, Eigen::OuterStride<>>;

// Tokens [t0, t1) of one call. Work is split into items (token t, kv head g, chunk c of
// kAttentionFastChunk cache rows). Each item runs two Eigen products for the G query heads
// sharing kv head g:
//   S = K_c * (scale Q_g)          [n, G] scores of the chunk's n rows
//   E = exp(S - m_c) per column     m_c = the chunk's column max, l_c = column sums of E
//   O_c = V_c^T * E                 [D, G] unnormalised partial outputs
// and the items of one (t, g) are then combined with the online-softmax rescaling
//   M = max_c m_c,  o = (sum_c exp(m_c - M) O_c) * 1 / (sum_c exp(m_c - M) l_c),
// which equals softmax(S) V in exact arithmetic. Items are independent, so OpenMP takes them in
// any order; the combination runs in chunk order, so results depend neither on the thread
// count nor on how many tokens share a call.
void attend_tokens(const AttentionParams& p, float scale, int64_t t0, int64_t t1, std::span<const float> q,
                   std::span<const float> gate, std::span<const float> k_cache, std::span<const float> v_cache,
                   std::span<float> o) {
  const int64_t H = p.q_heads, Hkv = p.kv_heads, D = p.head_dim;
  const int64_t G = H / Hkv, row = Hkv * D, C = kAttentionFastChunk;
  auto chunks = [&](int64_t t) { return (p.past + t + 1 + C - 1) / C; };
  // Item numbering: token t owns chunks(t) * Hkv consecutive items from first[t - t0].
  std::vector<int64_t> first(t1 - t0 + 1, 0);
  for (int64_t t = t0; t < t1; ++t) first[t - t0 + 1] = first[t - t0] + chunks(t) * Hkv;
  const int64_t items = first.back();
  // Per item: G maxima, G sums and the D x G partial output.
  std::vector<float> part_m(items * G), part_l(items * G), part_o(items * D * G);

  // Threads pay off from a few million multiply-adds (about a millisecond on one core).
  const int64_t work = 2 * items * std::min(C, p.past + t1) * D * G;
#pragma omp parallel if (work >= (1 << 22))
  {
    Eigen::MatrixXf qs(D, G), s, po(D, G);
#pragma omp for schedule(dynamic)
    for (int64_t it = 0; it < items; ++it) {
      const int64_t ti = std::upper_bound(first.begin(), first.end(), it) - first.begin() - 1;
      const int64_t t = t0 + ti, nch = chunks(t), local = it - first[ti];
      const int64_t g = local / nch, c = local % nch;
      const int64_t len = p.past + t + 1, r0 = c * C, n = std::min(C, len - r0);
      // The G query heads of kv head g are consecutive: a contiguous [G, D] block, i.e. D x G
      // column-major. Pre-scaling q costs D*G multiplies instead of n*G.
      qs = Eigen::Map<const Eigen::MatrixXf>(q.data() + (t * H + g * G) * D, D, G) * scale;
      const CacheBlock kb(k_cache.data() + r0 * row + g * D, n, D, Eigen::OuterStride<>(row));
      const CacheBlock vb(v_cache.data() + r0 * row + g * D, n, D, Eigen::OuterStride<>(row));
      s.noalias() = kb * qs;
      for (int64_t j = 0; j < G; ++j) {
        float* sj = s.data() + j * n;
        // Strict > as the reference: a NaN score never becomes the max, but its exp is NaN and
        // so is the sum, which carries it to every output of the head.
        float m = sj[0];
        for (int64_t r = 1; r < n; ++r)
          if (sj[r] > m) m = sj[r];
        float l = 0.0f;
        for (int64_t r = 0; r < n; ++r) {
          sj[r] = std::exp(sj[r] - m);  // glibc expf: within 1 ulp, NaN in -> NaN out
          l += sj[r];
        }
        part_m[it * G + j] = m, part_l[it * G + j] = l;
      }
      po.noalias() = vb.transpose() * s;
      std::copy(po.data(), po.data() + D * G, part_o.data() + it * D * G);
    }

    // Combine the chunks of each (t, g) in chunk order, then apply the gate.
#pragma omp for schedule(static)
    for (int64_t tg = 0; tg < (t1 - t0) * Hkv; ++tg) {
      const int64_t ti = tg / Hkv, g = tg % Hkv, t = t0 + ti, nch = chunks(t);
      const int64_t it0 = first[ti] + g * nch;
      Eigen::ArrayXf acc(D);
      for (int64_t j = 0; j < G; ++j) {
        float mx = part_m[it0 * G + j];
        for (int64_t c = 1; c < nch; ++c)
          if (part_m[(it0 + c) * G + j] > mx) mx = part_m[(it0 + c) * G + j];
        acc.setZero();
        float l = 0.0f;
        for (int64_t c = 0; c < nch; ++c) {
          const int64_t it = it0 + c;
          const float alpha = std::exp(part_m[it * G + j] - mx);  // 1 for the chunk holding the max
          l += alpha * part_l[it * G + j];
          acc += alpha * Eigen::Map<const Eigen::ArrayXf>(part_o.data() + (it * G + j) * D, D);
        }
        const float inv = 1.0f / l;
        const int64_t base = (t * H + g * G + j) * D;
        for (int64_t d = 0; d < D; ++d) o[base + d] = (acc[d] * inv) * (1.0f / (1.0f + std::exp(-gate[base + d])));
      }
    }
  }
}

}  // namespace

void attention_fast(const AttentionParams& p, std::span<const float> q, std::span<const float> gate,
                    std::span<const float> k, std::span<const float> v, std::span<float> k_cache,
                    std::span<float> v_cache, std::span<float> o) {
  attention_validate(p, q, gate, k, v, k_cache, v_cache, o);
  const int64_t T = p.tokens, row = p.kv_heads * p.head_dim;
  std::copy(k.begin(), k.end(), k_cache.begin() + p.past * row);
  std::copy(v.begin(), v.end(), v_cache.begin() + p.past * row);
  const float scale = p.scale != 0.0f ? p.scale : 1.0f / std::sqrt(float(p.head_dim));
  // Tokens go in batches whose partial outputs stay under ~kPartialFloats floats (a long
  // prefill would otherwise hold T * chunks * H * D of them); batching changes no result.
  constexpr int64_t kPartialFloats = int64_t(1) << 24;
  const int64_t per_chunk = p.q_heads * p.head_dim;  // partial floats per chunk of one token
  for (int64_t t0 = 0; t0 < T;) {
    int64_t t1 = t0 + 1, floats = ((p.past + t0) / kAttentionFastChunk + 1) * per_chunk;
    while (t1 < T) {
      const int64_t next = ((p.past + t1) / kAttentionFastChunk + 1) * per_chunk;
      if (floats + next > kPartialFloats) break;
      floats += next, ++t1;
    }
    attend_tokens(p, scale, t0, t1, q, gate, k_cache, v_cache, o);
    t0 = t1;
  }
}

}  // namespace moe
