// mla_attention: the core of DeepSeek-V3 / Cogito-V2 Multi-head Latent Attention, after the
// projections, the norms and the RoPE (those are matvec_q / matmul_q, rmsnorm, rope_yarn) and
// before o_proj (docs/ops/mla.md "MLA attention", "Absorbed form"; docs/ops/formats.md "MFLX snapshot" (the MLA rows);
// HF transformers models/deepseek_v3/modeling_deepseek_v3.py DeepseekV3Attention).
//
// Shape contract (all f32 row-major unless said; T = tokens, H = heads, Dn = nope_dim,
// Dr = rope_dim, Dv = v_dim, L = kv_lora (kv_lora_rank)):
//   q             [T, H, Dn + Dr]   per head q_nope (Dn) then q_pe (Dr, already YaRN-RoPE'd)
//   latent        [T, L]            the new tokens' kv latent (post kv_a_layernorm)
//   k_pe          [T, Dr]           the new tokens' rope key (post RoPE): ONE head shared by all H
//   kv_b          W_kb,h [Dn, L] and W_vb,h [Dv, L] of every head h, in one of two forms (MlaKvB):
//                 MLX / moeflux: QuantMatrix [H (Dn + Dv), L], bits/group_size as the params say
//                   (HF kv_b_proj layout): head h's rows [h (Dn+Dv), h (Dn+Dv) + Dn) are W_kb,h,
//                   the next Dv rows W_vb,h; params.kv_ggml_type = -1;
//                 GGUF (llama.cpp's deepseek2 converter splits kv_b_proj): k_b [H L, Dn], head h's
//                   rows [h L, h L + L) W_kb,h transposed (row c holds column c), and v_b [H Dv, L],
//                   head h's rows W_vb,h as is; each in a ggml format (core/ggml_blocks.h; the
//                   block runs along Dn for k_b, along L for v_b); params.kv_ggml_type = k_b's type
//   latent_cache  [capacity, L]     in/out: rows [0, past) hold earlier tokens; the op writes rows
//   kpe_cache     [capacity, Dr]    [past, past + T) (exact copies of latent, k_pe) and no others:
//                                   what engines cache and MFLX v2 snapshots store
//   o             [T, H Dv]         out (the o_proj input), head-major: o[t][h Dv + e]
//   Requirements: T >= 0 (T = 0 only appends nothing), H, Dn, Dr, Dv, L > 0, 0 <= past,
//   past + T <= capacity, scale finite and >= 0. Inputs must not overlap the caches (the append
//   would change them mid-call) and o must overlap nothing.
//
// Math, for token t (absolute position past + t; causal: it sees positions [0, past + t]) and
// head h, with k_nope[p][h] = W_kb,h lat_p and v[p][h] = W_vb,h lat_p (HF's naive form):
//   s[p] = (q_nope_h . k_nope[p][h] + q_pe_h . kpe_p) * scale,   P = softmax(s),
//   o[t][h] = sum_p P[p] v[p][h].
// scale is the softmax scale; the caller passes 1/sqrt(Dn + Dr) * mscale^2 for YaRN (Cogito:
// mscale = 0.1 ln 40 + 1 with mscale_all_dim 1, HF's DeepseekV3Attention.scaling); 0 means
// 1/sqrt(Dn + Dr) (the f32 tier computes 1/sqrtf(Dn + Dr)).
// All T new rows are appended first; token t then reads only rows < past + t + 1, so a prefill of
// T tokens equals T one-token calls bit for bit in each tier.
//
// Tiers.
//   truth (Acc = double): HF's naive form in f64. kv_b dequantised exactly (MLX: q s + b is exact in
//   double, q s has at most 16 significant bits and b is a bf16; ggml: ggml_dequant_f64), k_nope and v expanded for every
//   cache row [0, past + T) with f64 dots over c ascending, scores, softmax with f64 exp (same
//   conventions as the f32 tier below), o summed over p ascending, rounded to f32 once at the end.
//   f32 (Acc = float): MFR's absorbed ("folded") order (docs/ops/mla.md "Absorbed form"), one rounding per operation,
//   no contraction except where std::fma is said. Per token t, per head h:
//     1. q'[c] (c in [0, L)) = fma chain over d ascending from 0 of q_nope[d] * w_kb[d][c], where
//        w = fma(code, s, b) in f32 is the dequantised weight (matvec_q's f32 form); no source
//        fixes the order; this is one GPU invocation per c looping over the head's Dn rows,
//        or a CPU axpy over rows d ascending (the same per-element order).
//     2. score[p] = (one fma chain from 0 over c ascending of q'[c] lat_p[c], continued over j
//        ascending of q_pe[j] kpe_p[j]) * scale: the dot of [q' | q_pe] with the cache row
//        [lat | kpe] (576 wide in DeepSeek-V3), as engines that cache that row compute it
//        (no source fixes it; this is the natural order).
//     3. softmax as attention_ref's f32 tier (docs/ops/README.md "Scalar helpers"): m = s[0],
//        m = s[p] if s[p] > m (strict), e[p] = expf(s[p] - m) stored while sum += e[p] in p order,
//        inv = 1 / sum, P[p] = e[p] inv.
//     4. vc[c] = 0, then vc[c] += P[p] * lat_p[c] (product rounded, then the add) for p ascending.
//     5. o[e] = fma chain over c ascending from 0 of w_vb[e][c] * vc[c] (w as in 1): matvec_q's
//        f32 order on W_vb,h.
//   fast: the absorbed form with Eigen, heads over OpenMP threads (each thread dequantises its
//   head's 2 x [D, L] block once and runs the tokens in order). Per token the cache is taken in
//   chunks of kMlaFastChunk rows: scores = Lat_c (scale q') + Kpe_c (scale q_pe), chunk max m_c,
//   e = exp(s - m_c), l_c = sum e, vc_c = Lat_c^T e; the chunks are combined in chunk order with
//   M = max m_c, vc = sum exp(m_c - M) vc_c, l = sum exp(m_c - M) l_c, o = W_vb,h (vc * 1/l).
//   Mathematically equal; results depend neither on the thread count nor on T.
// The spec (spec/mla_attention_spec.h) derives the bound between the absorbed f32 / fast tiers
// and the naive truth: it is the evidence that the absorbed form equals HF's naive form.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "core/check_util.h"
#include "core/quant.h"
#include "ops/matvec_ggml.h"

namespace moe {

// kv_b in the form the model file holds it (shape contract above): an MLX matrix, or llama.cpp's
// k_b / v_b pair in ggml formats.
struct MlaKvB {
  QuantMatrix mlx;
  BlockMatrix k_b, v_b;
  bool ggml = false;
  MlaKvB() = default;
  MlaKvB(const QuantMatrix& m) : mlx(m) {}  // NOLINT: an MLX kv_b is the common case
  MlaKvB(const BlockMatrix& k, const BlockMatrix& v) : k_b(k), v_b(v), ggml(true) {}
};

struct MlaAttentionParams {
  int64_t tokens = 1;    // T new tokens
  int64_t heads = 0;     // H (128 in DeepSeek-V3 / Cogito-V2)
  int64_t nope_dim = 0;  // Dn = qk_nope_head_dim (128)
  int64_t rope_dim = 0;  // Dr = qk_rope_head_dim (64)
  int64_t v_dim = 0;     // Dv = v_head_dim (128)
  int64_t kv_lora = 0;   // L = kv_lora_rank (512)
  int64_t past = 0;      // rows already in the caches
  int64_t capacity = 0;  // rows the caches hold
  int bits = 4;          // an MLX kv_b's bits (2, 4, 8)
  int group_size = 64;   // an MLX kv_b's group size (divides L)
  float scale = 0.0f;    // softmax scale; 0 = 1/sqrt(Dn + Dr)
  int64_t kv_ggml_type = -1;  // -1: kv_b is MLX (bits, group_size); else k_b's ggml type (v_b any)
  template <class F>
  void visit(F&& f) const {
    f("tokens", tokens), f("heads", heads), f("nope_dim", nope_dim), f("rope_dim", rope_dim), f("v_dim", v_dim),
        f("kv_lora", kv_lora), f("past", past), f("capacity", capacity), f("bits", bits),
        f("group_size", group_size), f("scale", scale), f("kv_ggml_type", kv_ggml_type);
  }
};

// Cache rows per chunk of the fast tier's online softmax (the spec's bound counts the chunk
// combination, so it needs the number).
inline constexpr int64_t kMlaFastChunk = 512;

template <class Acc>
void mla_attention_ref(const MlaAttentionParams& p, std::span<const float> q, std::span<const float> latent,
                       std::span<const float> k_pe, const MlaKvB& kv_b, std::span<float> latent_cache,
                       std::span<float> kpe_cache, std::span<float> o);
void mla_attention_fast(const MlaAttentionParams& p, std::span<const float> q, std::span<const float> latent,
                        std::span<const float> k_pe, const MlaKvB& kv_b, std::span<float> latent_cache,
                        std::span<float> kpe_cache, std::span<float> o);
// One case of mla_attention_check (seeded inputs, three tiers, bounds) for tests. `head_windows`
// > 0 runs the scalar tiers on that many windows of 4 heads only (start, middle, end; the op is
// head-independent), the fast tier on all heads.
CheckResult mla_attention_check_one(const char* label, const MlaAttentionParams& p, uint64_t seed,
                                    int head_windows = 0);

// The truth's unrounded f64 output [T, H Dv] (HF's naive form) over caches that already hold the
// new rows [past, past + T); mla_attention_ref<double> rounds it to f32. For tests that compare
// another f64 evaluation (the absorbed form) with it beyond f32 precision.
std::vector<double> mla_attention_naive_f64(const MlaAttentionParams& p, std::span<const float> q,
                                            const MlaKvB& kv_b, std::span<const float> latent_cache,
                                            std::span<const float> kpe_cache);

// Head h's W_kb,h [Dn, L] and W_vb,h [Dv, L] (row-major) dequantised: exact in double, the f32
// tiers' weight in float (the contract's "w"). Shared by every tier and the spec.
template <class Acc>
void mla_kv_b_head(const MlaAttentionParams& p, const MlaKvB& kv_b, int64_t h, Acc* wk, Acc* wv);

// Shared by every tier: argument validation with messages naming the op.
void mla_attention_validate(const MlaAttentionParams& p, std::span<const float> q, std::span<const float> latent,
                            std::span<const float> k_pe, const MlaKvB& kv_b, std::span<const float> latent_cache,
                            std::span<const float> kpe_cache, std::span<const float> o);

}  // namespace moe
