// The scalar tiers of mla_attention: the naive HF form in f64 (the truth) and MFR's absorbed
// form in f32 (the engines' order). They are different algorithms on purpose (mla_attention.h):
// the spec's bound between them (mla_attention_bound, spec/mla_attention_spec.h), which the check
// applies, is the evidence that absorbing W_kb into q and W_vb after the softmax changes nothing
// but rounding. Shared: validation, the append, the dequantised weight and the softmax.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

#include "core/bf16.h"
#include "core/ggml_blocks.h"
#include "core/math.h"
#include "core/softmax.h"
#include "ops/mla_attention.h"

namespace moe {
namespace {

// a * b without signed overflow (UB); the validation rejects shapes whose sizes do not fit.
int64_t checked_mul(int64_t a, int64_t b, const char* what) {
  int64_t r = 0;
  MOE_CHECK(!__builtin_mul_overflow(a, b, &r),
            "mla_attention: " << what << " overflows int64 (" << a << " * " << b << ")");
  return r;
}

// Row r of W dequantised into out[0, cols): fma(code, s, b), one rounding in Acc (exact in
// double; matvec_q's f32 form in float).
template <class Acc>
void dequant_row(const QuantMatrix& W, int64_t r, Acc* out) {
  const uint32_t* wr = W.w + r * W.words_per_row();
  const int64_t groups = W.groups_per_row();
  for (int64_t g = 0; g < groups; ++g) {
    const Acc s = bf16_to_f32(W.scales[r * groups + g]), b = bf16_to_f32(W.biases[r * groups + g]);
    for (int64_t c = g * W.group_size; c < (g + 1) * W.group_size; ++c)
      out[c] = std::fma(Acc(quant_code(wr, c, W.bits)), s, b);
  }
}

template <class Acc>
Acc softmax_scale(const MlaAttentionParams& p) {
  return p.scale != 0.0f ? Acc(p.scale) : Acc(1) / std::sqrt(Acc(p.nope_dim + p.rope_dim));
}

// A ggml matrix's values: exact in double, ggml's to_float in float.
template <class Acc>
void ggml_values(const BlockMatrix& m, Acc* out) {
  const std::span<const uint8_t> bytes(m.data, m.bytes());
  if constexpr (std::is_same_v<Acc, double>) ggml_dequant_f64(m.type, bytes, m.rows * m.cols, out);
  else ggml_dequant_f32(m.type, bytes, m.rows * m.cols, out);
}

// MFR's absorbed order (mla_attention.h, f32 tier steps 1-5) over caches holding the new rows.
// Heads outer: each (token, head) is computed alone, so the order of the two loops changes no bit.
template <class Acc>
void absorbed(const MlaAttentionParams& p, std::span<const float> q, const MlaKvB& kv_b,
              std::span<const float> lat, std::span<const float> kpe, std::span<float> o) {
  const int64_t T = p.tokens, H = p.heads, Dn = p.nope_dim, Dr = p.rope_dim, Dv = p.v_dim, L = p.kv_lora;
  const Acc scale = softmax_scale<Acc>(p);
  std::vector<Acc> wk(Dn * L), wv(Dv * L), qp(L), s(p.past + T), vc(L);
  for (int64_t h = 0; h < H; ++h) {
    mla_kv_b_head<Acc>(p, kv_b, h, wk.data(), wv.data());
    for (int64_t t = 0; t < T; ++t) {
      const int64_t len = p.past + t + 1;
      const float* qh = q.data() + (t * H + h) * (Dn + Dr);
      // 1. q'[c] = fma chain over d ascending of q_nope[d] * w_kb[d][c] (an axpy per row d).
      std::fill(qp.begin(), qp.end(), Acc(0));
      for (int64_t d = 0; d < Dn; ++d) {
        const Acc qd = qh[d];
        const Acc* w = wk.data() + d * L;
        for (int64_t c = 0; c < L; ++c) qp[c] = std::fma(qd, w[c], qp[c]);
      }
      // 2. Scores: one fma chain over [q' | q_pe] . [lat_p | kpe_p], then times scale.
      for (int64_t pos = 0; pos < len; ++pos) {
        const float* lp = lat.data() + pos * L;
        const float* kp = kpe.data() + pos * Dr;
        Acc dot = 0;
        for (int64_t c = 0; c < L; ++c) dot = std::fma(qp[c], Acc(lp[c]), dot);
        for (int64_t j = 0; j < Dr; ++j) dot = std::fma(Acc(qh[Dn + j]), Acc(kp[j]), dot);
        s[pos] = dot * scale;
      }
      // 3. Softmax.
      softmax_in_place(s.data(), len);
      // 4. vc = sum_p P[p] lat_p (product rounded, then the add), p ascending.
      std::fill(vc.begin(), vc.end(), Acc(0));
      for (int64_t pos = 0; pos < len; ++pos) {
        const float* lp = lat.data() + pos * L;
        for (int64_t c = 0; c < L; ++c) vc[c] += s[pos] * Acc(lp[c]);
      }
      // 5. o_h = W_vb,h vc: per row, fma chain over c ascending (matvec_q's f32 order).
      for (int64_t e = 0; e < Dv; ++e) {
        const Acc* w = wv.data() + e * L;
        Acc acc = 0;
        for (int64_t c = 0; c < L; ++c) acc = std::fma(w[c], vc[c], acc);
        o[(t * H + h) * Dv + e] = float(acc);
      }
    }
  }
}

}  // namespace

template <class Acc>
void mla_kv_b_head(const MlaAttentionParams& p, const MlaKvB& kv_b, int64_t h, Acc* wk, Acc* wv) {
  const int64_t Dn = p.nope_dim, Dv = p.v_dim, L = p.kv_lora;
  if (!kv_b.ggml) {
    const int64_t row0 = h * (Dn + Dv);
    for (int64_t d = 0; d < Dn; ++d) dequant_row(kv_b.mlx, row0 + d, wk + d * L);
    for (int64_t e = 0; e < Dv; ++e) dequant_row(kv_b.mlx, row0 + Dn + e, wv + e * L);
    return;
  }
  std::vector<Acc> kt(static_cast<size_t>(L * Dn));  // k_b's head block [L, Dn], transposed below
  ggml_values(kv_b.k_b.row_block(h * L, L), kt.data());
  for (int64_t c = 0; c < L; ++c)
    for (int64_t d = 0; d < Dn; ++d) wk[d * L + c] = kt[size_t(c * Dn + d)];
  ggml_values(kv_b.v_b.row_block(h * Dv, Dv), wv);
}

template void mla_kv_b_head<float>(const MlaAttentionParams&, const MlaKvB&, int64_t, float*, float*);
template void mla_kv_b_head<double>(const MlaAttentionParams&, const MlaKvB&, int64_t, double*, double*);

// kv_b's form and shapes against the params (either form).
static void check_kv_b(const MlaAttentionParams& p, const MlaKvB& kv_b) {
  if (!kv_b.ggml) {
    MOE_CHECK(p.kv_ggml_type == -1, "mla_attention: kv_ggml_type=" << p.kv_ggml_type
                                                                  << " says llama.cpp's k_b / v_b, but kv_b is an MLX matrix");
    check_quant(kv_b.mlx, "mla_attention", "kv_b");
    const int64_t head_rows = checked_mul(p.heads, p.nope_dim + p.v_dim, "heads*(nope_dim+v_dim)");
    MOE_CHECK(kv_b.mlx.rows == head_rows && kv_b.mlx.cols == p.kv_lora && kv_b.mlx.bits == p.bits &&
                  kv_b.mlx.group_size == p.group_size,
              "mla_attention: kv_b is [" << kv_b.mlx.rows << ", " << kv_b.mlx.cols << "] bits=" << kv_b.mlx.bits
                                         << " group_size=" << kv_b.mlx.group_size
                                         << ", expected [heads*(nope_dim+v_dim), kv_lora] = [" << head_rows << ", "
                                         << p.kv_lora << "] bits=" << p.bits << " group_size=" << p.group_size);
    return;
  }
  MOE_CHECK(p.kv_ggml_type == int64_t(kv_b.k_b.type),
            "mla_attention: k_b is ggml type " << kv_b.k_b.type << ", params say kv_ggml_type=" << p.kv_ggml_type);
  const int64_t k_rows = checked_mul(p.heads, p.kv_lora, "heads*kv_lora"), v_rows = checked_mul(p.heads, p.v_dim, "heads*v_dim");
  for (auto [name, m, rows, cols] : {std::tuple{"k_b", &kv_b.k_b, k_rows, p.nope_dim}, std::tuple{"v_b", &kv_b.v_b, v_rows, p.kv_lora}}) {
    MOE_CHECK(ggml_dequant_supported(m->type), "mla_attention: " << name << " is ggml type " << m->type
                                                                   << ", which core/ggml_blocks.h does not decode");
    const GgmlBlockFormat* f = ggml_block_format(m->type);
    const int64_t block = f ? f->block : 1;
    MOE_CHECK(m->rows == rows && m->cols == cols && cols % block == 0 && m->data != nullptr,
              "mla_attention: " << name << " is [" << m->rows << ", " << m->cols << "], expected [" << rows << ", " << cols
                                << "] with whole blocks of " << block << " along the columns (and data)");
  }
}

void mla_attention_validate(const MlaAttentionParams& p, std::span<const float> q, std::span<const float> latent,
                            std::span<const float> k_pe, const MlaKvB& kv_b, std::span<const float> latent_cache,
                            std::span<const float> kpe_cache, std::span<const float> o) {
  MOE_CHECK(p.tokens >= 0 && p.heads > 0 && p.nope_dim > 0 && p.rope_dim > 0 && p.v_dim > 0 && p.kv_lora > 0,
            "mla_attention: tokens=" << p.tokens << " heads=" << p.heads << " nope_dim=" << p.nope_dim
                                     << " rope_dim=" << p.rope_dim << " v_dim=" << p.v_dim << " kv_lora=" << p.kv_lora
                                     << ", expected tokens >= 0 and the others > 0");
  check_cache_window("mla_attention", p.past, p.tokens, p.capacity);
  MOE_CHECK(std::isfinite(p.scale) && p.scale >= 0.0f,
            "mla_attention: scale=" << p.scale << ", expected finite and >= 0 (0 = 1/sqrt(nope_dim + rope_dim))");
  check_kv_b(p, kv_b);
  const int64_t q_size = checked_mul(checked_mul(p.tokens, p.heads, "tokens*heads"), p.nope_dim + p.rope_dim, "q size");
  check_size(q, q_size, "mla_attention", "q");
  check_size(latent, checked_mul(p.tokens, p.kv_lora, "latent size"), "mla_attention", "latent");
  check_size(k_pe, checked_mul(p.tokens, p.rope_dim, "k_pe size"), "mla_attention", "k_pe");
  check_size(latent_cache, checked_mul(p.capacity, p.kv_lora, "latent_cache size"), "mla_attention", "latent_cache");
  check_size(kpe_cache, checked_mul(p.capacity, p.rope_dim, "kpe_cache size"), "mla_attention", "kpe_cache");
  check_size(o, checked_mul(checked_mul(p.tokens, p.heads, "tokens*heads"), p.v_dim, "o size"), "mla_attention", "o");
  // The append writes the caches before anything is read, and o is written while the inputs and
  // the caches are still being read: overlapping buffers would silently change the result.
  MOE_CHECK(!spans_overlap(latent_cache, kpe_cache), "mla_attention: latent_cache and kpe_cache overlap");
  for (auto [name, in] : {std::pair{"q", q}, std::pair{"latent", latent}, std::pair{"k_pe", k_pe}}) {
    MOE_CHECK(!spans_overlap(in, latent_cache) && !spans_overlap(in, kpe_cache),
              "mla_attention: " << name << " overlaps a cache (the append would change it)");
    MOE_CHECK(!spans_overlap(in, o), "mla_attention: o overlaps " << name);
  }
  MOE_CHECK(!spans_overlap(o, latent_cache) && !spans_overlap(o, kpe_cache), "mla_attention: o overlaps a cache");
}

std::vector<double> mla_attention_naive_f64(const MlaAttentionParams& p, std::span<const float> q,
                                            const MlaKvB& kv_b, std::span<const float> latent_cache,
                                            std::span<const float> kpe_cache) {
  const int64_t T = p.tokens, H = p.heads, Dn = p.nope_dim, Dr = p.rope_dim, Dv = p.v_dim, L = p.kv_lora;
  const int64_t D = Dn + Dv, rows = p.past + T;
  // The caller's shapes (mla_attention_validate checks the rest at the op's entry).
  check_kv_b(p, kv_b);
  check_size(q, T * H * (Dn + Dr), "mla_attention", "q");
  check_min_size(latent_cache, rows * L, "mla_attention", "latent_cache");
  check_min_size(kpe_cache, rows * Dr, "mla_attention", "kpe_cache");
  const double scale = softmax_scale<double>(p);
  std::vector<double> o(T * H * Dv);
  std::vector<double> wt(L * D), kv(rows * D), s(rows), w(D * L);
  for (int64_t h = 0; h < H; ++h) {
    // The head's [D, L] block ([W_kb,h; W_vb,h]), exactly, transposed to wt[c][r]: the expansion
    // below is an axpy over the head's rows, each kv[pos][r] still summed over c ascending.
    mla_kv_b_head<double>(p, kv_b, h, w.data(), w.data() + Dn * L);
    for (int64_t r = 0; r < D; ++r)
      for (int64_t c = 0; c < L; ++c) wt[c * D + r] = w[r * L + c];
    // k_nope[pos] = kv[pos][0, Dn), v[pos] = kv[pos][Dn, D) for every cache row the call reads.
    std::fill(kv.begin(), kv.end(), 0.0);
    for (int64_t pos = 0; pos < rows; ++pos) {
      double* kr = kv.data() + pos * D;
      for (int64_t c = 0; c < L; ++c) {
        const double x = latent_cache[pos * L + c];
        const double* wc = wt.data() + c * D;
        for (int64_t r = 0; r < D; ++r) kr[r] += wc[r] * x;
      }
    }
    for (int64_t t = 0; t < T; ++t) {
      const int64_t len = p.past + t + 1;
      const float* qh = q.data() + (t * H + h) * (Dn + Dr);
      // HF: q = [q_nope | q_pe], k = [k_nope | k_pe] with k_pe shared by all heads.
      for (int64_t pos = 0; pos < len; ++pos) {
        double dot = 0;
        for (int64_t d = 0; d < Dn; ++d) dot += double(qh[d]) * kv[pos * D + d];
        for (int64_t j = 0; j < Dr; ++j) dot += double(qh[Dn + j]) * double(kpe_cache[pos * Dr + j]);
        s[pos] = dot * scale;
      }
      softmax_in_place(s.data(), len);
      double* oh = o.data() + (t * H + h) * Dv;
      for (int64_t pos = 0; pos < len; ++pos)
        for (int64_t e = 0; e < Dv; ++e) oh[e] += s[pos] * kv[pos * D + Dn + e];
    }
  }
  return o;
}

template <class Acc>
void mla_attention_ref(const MlaAttentionParams& p, std::span<const float> q, std::span<const float> latent,
                       std::span<const float> k_pe, const MlaKvB& kv_b, std::span<float> latent_cache,
                       std::span<float> kpe_cache, std::span<float> o) {
  mla_attention_validate(p, q, latent, k_pe, kv_b, latent_cache, kpe_cache, o);
  // Append all T rows first (exact copies); token t then reads only rows < past + t + 1.
  std::copy(latent.begin(), latent.end(), latent_cache.begin() + p.past * p.kv_lora);
  std::copy(k_pe.begin(), k_pe.end(), kpe_cache.begin() + p.past * p.rope_dim);
  if (p.tokens == 0) return;
  if constexpr (std::is_same_v<Acc, double>) {
    const std::vector<double> o64 = mla_attention_naive_f64(p, q, kv_b, latent_cache, kpe_cache);
    for (size_t i = 0; i < o64.size(); ++i) o[i] = float(o64[i]);
  } else {
    absorbed<Acc>(p, q, kv_b, latent_cache, kpe_cache, o);
  }
}

template void mla_attention_ref<float>(const MlaAttentionParams&, std::span<const float>, std::span<const float>,
                                       std::span<const float>, const MlaKvB&, std::span<float>,
                                       std::span<float>, std::span<float>);
template void mla_attention_ref<double>(const MlaAttentionParams&, std::span<const float>, std::span<const float>,
                                        std::span<const float>, const MlaKvB&, std::span<float>,
                                        std::span<float>, std::span<float>);

}  // namespace moe
