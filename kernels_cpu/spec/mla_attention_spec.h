// mla_attention's spec: its shapes, its seeded inputs and its error bound, read by the CPU
// three-way check (kernels_cpu/check/mla_attention_check.cpp), the GPU cases
// (compare/cases/mla_attention_case.cpp, also for mutate) and, through the GPU backend, bisect.
// The op itself: kernels_cpu/ops/mla_attention.h.
#pragma once
#include <span>
#include <vector>

#include "core/quant.h"
#include "ops/mla_attention.h"
#include "spec/precision_model.h"
#include "spec/shape.h"

namespace moe {

// Inputs with a real MLA layer's statistics: q_nope and q_pe come out of q_b_proj (N(0, 1)) with
// a per-head gain in [0.25, 2.5] (flat to peaked attention) times q_gain; latents RMS-normalised
// (N(0, 1)) around a shared per-channel mean, as real keys share a direction across positions;
// k_pe ~ N(0, 1) after RoPE; kv_b an MLX-quantised Gaussian N(0, 1/L) (k_nope and v entries
// ~N(0, 1)), or, with kv_ggml_type >= 0, llama.cpp's k_b and v_b as random blocks of that ggml
// type with real checkpoints' scales (matvec_ggml_inputs). Cache rows from `past` on hold junk the
// append must replace.
struct MlaAttentionInputs {
  std::vector<float> q, latent, k_pe, latent_cache, kpe_cache;  // caches before the append
  QuantStorage kv_b;                                             // MLX
  std::vector<uint8_t> k_b, v_b;                                 // ggml
  MlaKvB view(const MlaAttentionParams& p) const;
};
MlaAttentionInputs mla_attention_inputs(const MlaAttentionParams& p, uint64_t seed, double q_gain = 1.0);
// The caches after the append: rows [past, past + T) := latent, k_pe.
void mla_attention_append(const MlaAttentionParams& p, const MlaAttentionInputs& in, std::vector<float>& lc,
                          std::vector<float>& kc);

struct MlaAttentionVariant {
  double q_gain = 1.0;  // q scaled by this: peaked attention, scores over a range of ~100
  int head_windows = 0;  // > 0: the CPU's scalar tiers run that many windows of 4 heads (start, middle, end)
  bool gpu = true;       // false: the CPU check's own shapes
};
using MlaAttentionShape = SpecShape<MlaAttentionParams, MlaAttentionVariant>;
// Remainders: odd heads and widths, every bit width, group sizes 4 to 128, decode at kv lengths 1,
// 2, 31, 33, prefill from empty and after a past, T = 0, more rows than a workgroup's 64, kv_lora
// past 512, the default and explicit scales, rope and v widths past 64 lanes with scores spread
// over more than the f32 exp range, the fast tier's 512-row chunk edges. Real: Cogito-V2 /
// DeepSeek-V3 (128 heads, nope 128, rope 64, v 128, kv_lora 512, 4-bit groups of 64, HF's scale
// 192^-1/2 mscale^2 with mscale = 0.1 ln 40 + 1), decode and prefill. Both with llama.cpp's k_b /
// v_b in ggml formats too (CPU only: no bundled GPU kernel reads them).
std::vector<MlaAttentionShape> mla_attention_shapes(bool remainders, bool real);

// Per-element bound on |o - o_truth| [T, H Dv] for an absorbed f32 evaluation (one pass, chunk 0:
// the f32 tier, a GPU kernel; or an online softmax in chunks of `chunk` rows: the fast tier)
// against the naive f64 truth, given the caches after the append. Every sum in any order,
// fused or not: m.sum(n) sum |terms|. Per (t, h), len = past + t + 1 rows, w the exact dequantised
// weights (an f32 evaluation's are w (1 + d), |d| <= u, one rounding — exact for code * s + b
// fused or not):
//  * q'[c] = sum_d qn[d] wk[d][c]: Dn terms plus the weight rounding: |dq'[c]| <= g_q Qa[c],
//    g_q = m.sum(Dn + 1), Qa[c] = sum_d |qn[d] wk[d][c]|.
//  * the score dot over [q' | q_pe] . [lat_p | kpe_p] (L + Dr terms, g_s) errs by g_s (C_p + B_p)
//    plus the propagated sum_c |dq'_c| |lat_pc| <= g_q A_p, A_p = sum_c Qa[c] |lat_pc| (the naive
//    form's sum of |q w lat|), C_p = sum_c |q'_c lat_pc|, B_p = sum_j |q_pe kpe_pj|:
//    E_p = scale (g_q A_p (1 + g_s) + g_s (C_p + B_p)); |s_p| and the computed score are within
//    F_p = scale (C_p + B_p) + E_p. Scores within Ds = max E_p + u F_max (the scale multiply, or
//    q', q_pe pre-scaled) + subnormal products of the q' and score chains flushed (2^-126 each):
//    scale 2^-126 (Dn max_p sum_c |lat_pc| + L + Dr + 1); the exponents: exponent_error.
//  * weights: softmax_row_bound (spec/attention_bound.h), P^_p = P_p (1 + eta_p); the weight
//    errors reach o linearly: W_vb (sum_p P_p eta_p lat_p) = sum_p P_p eta_p v_p with v_p =
//    W_vb,h lat_p exactly: We[e] = sum_p P_p eta_p |v_p[e]| (the naive form's own output sum).
//  * vc[c] = sum_p P^_p lat_pc (in chunks: per-chunk sums, alpha_c vc_c, the sum over chunks)
//    rounds by at most gam sum_p P_p (1 + eta_p) |lat_pc| = gam (U + Ue)[c], U = sum_p P_p |lat_p|,
//    Ue = sum_p P_p eta_p |lat_p|, |vc^| <= (1 + gam) (U + Ue); those roundings reach o through |W_vb|.
//  * o[e] = sum_c wv[e][c] vc^[c]: L terms plus the weight rounding (g_o = m.sum(L + 1)): with
//    Z[e] = sum_c |wv[e][c]| (U + Ue)[c], |do[e]| <= We[e] + (gam + g_o (1 + gam)) Z[e]; the truth's
//    rounding to f32 and its own f64 error (exponents off by ~(Dn + L + Dr) 2^-53 F_max, far below
//    u) add 2u Wp[e], Wp = sum_p P_p |v_p| >= |o|.
//  * exp results below the f32 normal range: each weight errs by at most 2^-126 absolute, so vc[c]
//    by 2^-125 (1 + sum_p |lat_pc|) and o[e] by 2^-125 Y[e] (1 + g_o), Y[e] = sum_c |wv[e][c]|
//    (1 + sum_p |lat_pc|); subnormal products of the output chain (L + 1) 2^-126.
std::vector<double> mla_attention_bound(const MlaAttentionParams& p, std::span<const float> q, const MlaKvB& kv_b,
                                        std::span<const float> latent_cache, std::span<const float> kpe_cache,
                                        int64_t chunk, const PrecisionModel& m);

}  // namespace moe
