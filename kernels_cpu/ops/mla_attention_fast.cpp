#include <algorithm>
#include <cmath>
#include <vector>

#include "core/eigen.h"
#include "ops/dequant.h"
#include "ops/mla_attention.h"

namespace moe {
namespace {

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstRowMap = Eigen::Map<const RowMat>;
using Vec = Eigen::VectorXf;

// Rows [r0, r0 + n) of W dequantised into out [n, cols] by the dequant op (bit-exact with the
// scalar tiers' fma(code, s, b): code * s is exact, dequant.h).
void dequant_rows(const QuantMatrix& W, int64_t r0, int64_t n, RowMat& out) {
  out.resize(n, W.cols);
  DequantParams p;
  p.rows = n, p.cols = W.cols, p.bits = W.bits, p.group_size = W.group_size;
  dequant_fast(p, W.row_block(r0, n), std::span<float>(out.data(), size_t(n * W.cols)));
}

// Per-thread buffers of one head's work.
struct HeadScratch {
  RowMat wk, wv;       // W_kb,h [Dn, L] and W_vb,h [Dv, L], dequantised once per head
  Vec qp, qpe, s, vc;  // scale q' [L], scale q_pe [Dr], a chunk's scores [C], the combined vc [L]
  std::vector<float> part_m, part_l;  // per chunk: max and sum of exp
  RowMat part_vc;                     // per chunk: unnormalised sum of e lat [nc, L]
};

// Token t of head h, absorbed: scores against the cache in chunks of C rows, each chunk's
// partial softmax (max, sum, e-weighted latent sum), then the chunks combined in chunk order
// (online softmax; equal to softmax(s) Lat in exact arithmetic) and o_h = W_vb,h vc.
void head_token(const MlaAttentionParams& p, float scale, int64_t t, int64_t h, std::span<const float> q,
                std::span<const float> lat, std::span<const float> kpe, std::span<float> o, HeadScratch& w) {
  const int64_t H = p.heads, Dn = p.nope_dim, Dr = p.rope_dim, Dv = p.v_dim, L = p.kv_lora, C = kMlaFastChunk;
  const int64_t len = p.past + t + 1, nc = (len + C - 1) / C;
  const float* qh = q.data() + (t * H + h) * (Dn + Dr);
  // Pre-scaling q' and q_pe costs L + Dr multiplies instead of one per cache row.
  w.qp.noalias() = w.wk.transpose() * Eigen::Map<const Vec>(qh, Dn);
  w.qp *= scale;
  w.qpe = Eigen::Map<const Vec>(qh + Dn, Dr) * scale;
  w.part_m.resize(nc), w.part_l.resize(nc);
  w.part_vc.resize(nc, L);
  for (int64_t c = 0; c < nc; ++c) {
    const int64_t r0 = c * C, n = std::min(C, len - r0);
    const ConstRowMap lc(lat.data() + r0 * L, n, L), kc(kpe.data() + r0 * Dr, n, Dr);
    auto s = w.s.head(n);
    s.noalias() = lc * w.qp;
    s.noalias() += kc * w.qpe;
    // Strict > as the reference: a NaN score never becomes the max, but its exp is NaN and so is
    // the sum, which carries it to every output of the head.
    float m = s[0];
    for (int64_t r = 1; r < n; ++r)
      if (s[r] > m) m = s[r];
    float l = 0.0f;
    for (int64_t r = 0; r < n; ++r) {
      s[r] = std::exp(s[r] - m);  // glibc expf: within 1 ulp, NaN in -> NaN out
      l += s[r];
    }
    w.part_m[c] = m, w.part_l[c] = l;
    w.part_vc.row(c).noalias() = (lc.transpose() * s).transpose();
  }
  float mx = w.part_m[0];
  for (int64_t c = 1; c < nc; ++c)
    if (w.part_m[c] > mx) mx = w.part_m[c];
  float l = 0.0f;
  w.vc.setZero();
  for (int64_t c = 0; c < nc; ++c) {
    const float alpha = std::exp(w.part_m[c] - mx);  // 1 for the chunk holding the max
    l += alpha * w.part_l[c];
    w.vc += alpha * w.part_vc.row(c).transpose();
  }
  w.vc *= 1.0f / l;
  Eigen::Map<Vec>(o.data() + (t * H + h) * Dv, Dv).noalias() = w.wv * w.vc;
}

}  // namespace

void mla_attention_fast(const MlaAttentionParams& p, std::span<const float> q, std::span<const float> latent,
                        std::span<const float> k_pe, const MlaKvB& kv_b, std::span<float> latent_cache,
                        std::span<float> kpe_cache, std::span<float> o) {
  mla_attention_validate(p, q, latent, k_pe, kv_b, latent_cache, kpe_cache, o);
  std::copy(latent.begin(), latent.end(), latent_cache.begin() + p.past * p.kv_lora);
  std::copy(k_pe.begin(), k_pe.end(), kpe_cache.begin() + p.past * p.rope_dim);
  const int64_t T = p.tokens, H = p.heads, Dn = p.nope_dim, Dv = p.v_dim, L = p.kv_lora;
  if (T == 0) return;
  const float scale = p.scale != 0.0f ? p.scale : 1.0f / std::sqrt(float(Dn + p.rope_dim));
  // Threads pay off from a few million multiply-adds (about a millisecond on one core).
  const int64_t work = H * ((Dn + Dv) * L + T * (p.past + T) * (L + p.rope_dim) * 2);
  // Heads are independent; each thread dequantises a head's block once and runs its tokens in
  // order, so the results depend neither on the thread count nor on how many tokens share a call.
#pragma omp parallel if (work >= (1 << 22))
  {
    HeadScratch w;
    w.wk.resize(Dn, L), w.wv.resize(Dv, L);
    w.qp.resize(L), w.qpe.resize(p.rope_dim), w.s.resize(kMlaFastChunk), w.vc.resize(L);
#pragma omp for schedule(dynamic)
    for (int64_t h = 0; h < H; ++h) {
      if (kv_b.ggml) {  // ggml's f32 values, k_b's head block transposed (mla_kv_b_head)
        mla_kv_b_head<float>(p, kv_b, h, w.wk.data(), w.wv.data());
      } else {
        dequant_rows(kv_b.mlx, h * (Dn + Dv), Dn, w.wk);
        dequant_rows(kv_b.mlx, h * (Dn + Dv) + Dn, Dv, w.wv);
      }
      for (int64_t t = 0; t < T; ++t) head_token(p, scale, t, h, q, latent_cache, kpe_cache, o, w);
    }
  }
}

}  // namespace moe
