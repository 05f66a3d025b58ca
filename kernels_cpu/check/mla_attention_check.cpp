#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "core/bf16.h"
#include "core/params.h"
#include "core/rng.h"
#include "core/test_data.h"
#include "ops/mla_attention.h"

namespace moe {
namespace {

// Seeded inputs with the statistics of a real MLA layer: q_nope and q_pe come out of q_b_proj
// (N(0, 1) entries) with a per-head gain in [0.25, 2.5], so heads range from nearly flat to
// peaked attention; latents are RMS-normalised (N(0, 1)) around a shared per-channel mean, as
// real keys share a direction across positions; k_pe ~ N(0, 1) after RoPE; kv_b is an
// MLX-quantised Gaussian N(0, 1/L) (so k_nope and v entries are ~N(0, 1)). Cache rows at and
// past `past` start as junk: the op must overwrite [past, past + T) and leave the rest alone.
struct Inputs {
  std::vector<float> q, latent, k_pe, latent_cache, kpe_cache;
  QuantStorage kv_b;
};

Inputs make_inputs(const MlaAttentionParams& p, uint64_t seed) {
  const int64_t T = p.tokens, H = p.heads, Dq = p.nope_dim + p.rope_dim, L = p.kv_lora, Dr = p.rope_dim;
  Rng rng(seed);
  Inputs in;
  in.q = rng.fork(1).normal_vec(T * H * Dq, 1.0);
  Rng rgain = rng.fork(2);
  std::vector<double> gain(H);
  for (auto& x : gain) x = 0.25 + 2.25 * rgain.uniform01();
  for (int64_t i = 0; i < T * H * Dq; ++i) in.q[i] = float(in.q[i] * gain[(i / Dq) % H]);
  const std::vector<float> mean = rng.fork(3).normal_vec(L, 0.5);
  auto latents = [&](Rng r, int64_t rows) {
    std::vector<float> x = r.normal_vec(rows * L, 1.0);
    for (int64_t i = 0; i < rows * L; ++i) x[i] += mean[i % L];
    return x;
  };
  in.latent = latents(rng.fork(4), T);
  in.k_pe = rng.fork(5).normal_vec(T * Dr, 1.0);
  in.latent_cache = latents(rng.fork(6), p.capacity);
  in.kpe_cache = rng.fork(7).normal_vec(p.capacity * Dr, 1.0);
  for (int64_t i = p.past * L; i < p.capacity * L; ++i) in.latent_cache[i] = 1000.0f + float(i);
  for (int64_t i = p.past * Dr; i < p.capacity * Dr; ++i) in.kpe_cache[i] = -7.0f;
  in.kv_b = random_quant(rng.fork(8), H * (p.nope_dim + p.v_dim), L, p.bits, p.group_size);
  return in;
}

using MatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Rows [r0, r0 + n) of W, exactly (q s + b in f64).
MatD dequant_exact(const QuantMatrix& W, int64_t r0, int64_t n) {
  MatD out(n, W.cols);
  const int64_t groups = W.groups_per_row();
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < W.cols; ++c) {
      const int64_t g = (r0 + r) * groups + c / W.group_size;
      out(r, c) = double(quant_code(W.w + (r0 + r) * W.words_per_row(), c, W.bits)) * bf16_to_f32(W.scales[g]) +
                  bf16_to_f32(W.biases[g]);
    }
  return out;
}

// Per-element bound on |o_tier - o_truth| for the f32 tier (absorbed, sequential) and the fast
// tier (absorbed, Eigen, chunked online softmax) against the naive f64 truth. u = 2^-24; every
// sum bound is Higham's gamma_n sum |terms|, valid in any order with or without fma. For one
// (t, h), len = past + t + 1 rows, nc = fast-tier chunks, w the exact dequantised weights (the
// tiers' f32 weights are w (1 + d), |d| <= u, one rounding):
//  * q'[c] = sum_d qn[d] wk[d][c]: Dn terms plus the weight rounding: |dq'[c]| <= g_{Dn+1} Qa[c],
//    Qa[c] = sum_d |qn[d] wk[d][c]|.
//  * the score dot over [q' | q_pe] . [lat_p | kpe_p] (L + Dr terms) errs by g_{L+Dr} (sum_c
//    |q^'_c lat_pc| + B_p) plus the propagated sum_c |dq'_c| |lat_pc| <= g_{Dn+1} A_p, where
//    A_p = sum_c Qa[c] |lat_pc| (the naive form's sum of |q w lat| terms), C_p = sum_c |q'_c lat_pc|,
//    B_p = sum_j |q_pe kpe_pj|:  E_p = scale (g_{Dn+1} A_p (1 + g_{L+Dr}) + g_{L+Dr} (C_p + B_p)).
//    |s_p| and the computed score are both <= F_p = scale (C_p + B_p) + E_p.
//  * exponent-level roundings (as attention_check): the f32 scale 1/sqrtf within 2u, the scale
//    multiply (or the fast tier's pre-scaled q', q_pe) u, s - m (m a computed max) u |s - m| <=
//    2u F_max, the fast tier's m_c - M another 2u F_max: 7u F_max; subnormal products in the q'
//    and score chains add at most 2^-150 each: scale 2^-149 (Dn max_p sum_c |lat_pc| + L + Dr + 1).
//    Every exponent is off by at most Delta = max_p E_p + 7u F_max + that.
//  * weights (attention_check's argument): P^_p = P_p (1 + eta_p), |eta_p| <= rho =
//    exp(2 Delta) (1 + g_{len+nc} + 10u) - 1 (exp within 2 ulp for e_p and the chunk factor, the
//    normaliser's sums, 1/l and the multiply by it).
//  * the weight errors reach o linearly: W_vb (sum_p P_p eta_p lat_p) = sum_p P_p eta_p v_p with
//    v_p = W_vb,h lat_p exactly, so they add at most rho Wp[e], Wp[e] = sum_p P_p |v_p[e]| (the
//    naive form's own output sum, not a sum over the 2^16 products inside it).
//  * vc[c] = sum_p P^_p lat_pc (len products; the fast tier: per-chunk sums, alpha_c vc_c, the sum
//    over chunks) rounds by at most g_{len+nc} (1 + rho) U[c], U[c] = sum_p P_p |lat_pc|, so
//    |vc^[c]| <= (1 + rho) (1 + g_{len+nc}) U[c]; those roundings reach o through |W_vb|.
//  * o[e] = sum_c wv[e][c] vc^[c]: L terms plus the weight rounding: g_{L+1} sum_c |wv| |vc^|.
//    With Z[e] = sum_c |wv[e][c]| U[c]: |do[e]| <= rho Wp[e] + (1 + rho) (g_{len+nc} +
//    g_{L+1} (1 + g_{len+nc})) Z[e]; the truth's rounding to f32 and its own f64 error (its
//    exponents off by ~(Dn + L + Dr) 2^-53 F_max, far below u) add 2u Wp[e] (|o| <= Wp).
//  * exp results below the f32 normal range: each weight errs by at most 2^-126 absolute (attention_check), so
//    vc[c] by 2^-125 (1 + sum_p |lat_pc|) and o[e] by 2^-125 Y[e] (1 + g_{L+1}), Y[e] = sum_c |wv[e][c]|
//    (1 + sum_p |lat_pc|); subnormal products of the output chain (L + 1) 2^-149.
// The ingredients (q', A, C, B, P, U, Z, Wp) are computed here in f64, independently of the tiers.
}  // namespace

std::vector<double> mla_attention_bound(const MlaAttentionParams& p, std::span<const float> q, const QuantMatrix& kv_b,
                                        std::span<const float> lat, std::span<const float> kpe, const MlaRounding& rd) {
  const int64_t T = p.tokens, H = p.heads, Dn = p.nope_dim, Dr = p.rope_dim, Dv = p.v_dim, L = p.kv_lora;
  const double u = kU32;
  const double scale = p.scale != 0.0f ? double(p.scale) : 1.0 / std::sqrt(double(Dn + Dr));
  const double g_q = gamma_n(double(Dn + 1)), g_s = gamma_n(double(L + Dr)), g_o = gamma_n(double(L + 1));
  const int64_t rows = p.past + T;
  MatD Lat(rows, L), Kpe(rows, Dr);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < L; ++c) Lat(r, c) = lat[r * L + c];
    for (int64_t j = 0; j < Dr; ++j) Kpe(r, j) = kpe[r * Dr + j];
  }
  const MatD LatAbs = Lat.cwiseAbs(), KpeAbs = Kpe.cwiseAbs();
  const Eigen::VectorXd lat_row_sums = LatAbs.rowwise().sum();
  std::vector<double> bound(T * H * Dv);
  // Heads are independent and write disjoint parts of `bound`.
#pragma omp parallel for schedule(dynamic) if (H > 1 && rows * L >= (1 << 14))
  for (int64_t h = 0; h < H; ++h) {
    const MatD wk = dequant_exact(kv_b, h * (Dn + Dv), Dn), wv = dequant_exact(kv_b, h * (Dn + Dv) + Dn, Dv);
    const MatD wvAbs = wv.cwiseAbs(), wkAbs = wk.cwiseAbs();
    for (int64_t t = 0; t < T; ++t) {
      const int64_t len = p.past + t + 1, nc = rd.chunk > 0 ? (len + rd.chunk - 1) / rd.chunk : 0;
      const float* qh = q.data() + (t * H + h) * (Dn + Dr);
      Eigen::VectorXd qn(Dn), qpe(Dr);
      for (int64_t d = 0; d < Dn; ++d) qn[d] = qh[d];
      for (int64_t j = 0; j < Dr; ++j) qpe[j] = qh[Dn + j];
      const Eigen::VectorXd qp = wk.transpose() * qn, qa = wkAbs.transpose() * qn.cwiseAbs();
      const auto lt = LatAbs.topRows(len);
      const Eigen::VectorXd A = lt * qa, C = lt * qp.cwiseAbs(), B = KpeAbs.topRows(len) * qpe.cwiseAbs();
      const Eigen::VectorXd s = (Lat.topRows(len) * qp + Kpe.topRows(len) * qpe) * scale;
      const Eigen::VectorXd E = scale * (g_q * (1 + g_s) * A + g_s * (C + B));
      const Eigen::VectorXd F = scale * (C + B) + E;
      const double delta = E.maxCoeff() + 7 * u * F.maxCoeff() +
                           scale * rd.tiny * (double(Dn) * lat_row_sums.head(len).maxCoeff() + double(L + Dr + 1));
      const double gam = gamma_n(double(len + nc));
      const double rho = std::exp(2 * delta) * (1 + gam + rd.weight_rel(2 * F.maxCoeff())) - 1;
      Eigen::VectorXd P = (s.array() - s.maxCoeff()).exp().matrix();
      P /= P.sum();
      const Eigen::VectorXd U = lt.transpose() * P;                                                 // [L]
      const Eigen::VectorXd Z = wvAbs * U;                                                          // [Dv]
      const Eigen::VectorXd Wp = (Lat.topRows(len) * wv.transpose()).cwiseAbs().transpose() * P;       // [Dv]
      const Eigen::VectorXd Y = wvAbs * (Eigen::VectorXd::Ones(L) + lt.colwise().sum().transpose());  // [Dv]
      for (int64_t e = 0; e < Dv; ++e)
        bound[(t * H + h) * Dv + e] = (rho + 2 * u) * Wp[e] + (1 + rho) * (gam + g_o * (1 + gam)) * Z[e] +
                                      0x1.0p-125 * Y[e] * (1 + g_o) + double(L + 1) * rd.tiny;
    }
  }
  return bound;
}

namespace {

// Heads [h0, h0 + n) of a call as a call of its own: q's heads, kv_b's rows (the op is
// head-independent: a head reads only its q, its kv_b rows and the shared caches).
struct HeadWindow {
  MlaAttentionParams p;
  std::vector<float> q;
  QuantMatrix kv_b;
};
HeadWindow head_window(const MlaAttentionParams& p, const Inputs& in, int64_t h0, int64_t n) {
  HeadWindow w{p, {}, in.kv_b.view().row_block(h0 * (p.nope_dim + p.v_dim), n * (p.nope_dim + p.v_dim))};
  w.p.heads = n;
  const int64_t Dq = p.nope_dim + p.rope_dim;
  for (int64_t t = 0; t < p.tokens; ++t)
    w.q.insert(w.q.end(), in.q.begin() + (t * p.heads + h0) * Dq, in.q.begin() + (t * p.heads + h0 + n) * Dq);
  return w;
}

}  // namespace

CheckResult mla_attention_check_one(const char* label, const MlaAttentionParams& p, uint64_t seed, int head_windows) {
  const Inputs in = make_inputs(p, seed);
  const QuantMatrix kv_b = in.kv_b.view();
  // The caches after the append: rows [past, past + T) replaced, the rest untouched.
  std::vector<float> lc_want = in.latent_cache, kc_want = in.kpe_cache;
  std::copy(in.latent.begin(), in.latent.end(), lc_want.begin() + p.past * p.kv_lora);
  std::copy(in.k_pe.begin(), in.k_pe.end(), kc_want.begin() + p.past * p.rope_dim);

  std::string shape = label;
  std::vector<std::pair<int64_t, int64_t>> windows;  // [first head, head count)
  constexpr int64_t kWindow = 4;
  if (head_windows <= 0 || p.heads <= head_windows * kWindow) {
    windows.push_back({0, p.heads});
  } else {
    const int64_t starts[] = {0, (p.heads - kWindow) / 2, p.heads - kWindow};
    for (int i = 0; i < std::min(head_windows, 3); ++i) windows.push_back({starts[i], kWindow});
    shape += " (scalar tiers on " + std::to_string(windows.size()) + " windows of 4 heads)";
  }
  CheckResult res{"mla_attention", shape, params_to_string(p), seed};
  std::vector<float> fast_all(p.tokens * p.heads * p.v_dim), lc_f = in.latent_cache, kc_f = in.kpe_cache;
  res.fast.seconds = time_call([&] { mla_attention_fast(p, in.q, in.latent, in.k_pe, kv_b, lc_f, kc_f, fast_all); });
  res.fast.add("latent_cache", lc_want, lc_f, 0.0);  // data movement: bit-exact
  res.fast.add("kpe_cache", kc_want, kc_f, 0.0);

  std::vector<float> truth, r32, fast;
  std::vector<double> bound;
  const int64_t Dv = p.v_dim;
  for (auto [h0, n] : windows) {
    const HeadWindow w = head_window(p, in, h0, n);
    const int64_t size = p.tokens * n * Dv;
    std::vector<float> t64(size), t32(size), lc_t = in.latent_cache, kc_t = in.kpe_cache;
    std::vector<float> lc_r = in.latent_cache, kc_r = in.kpe_cache;
    res.truth_seconds += time_call([&] { mla_attention_ref<double>(w.p, w.q, in.latent, in.k_pe, w.kv_b, lc_t, kc_t, t64); });
    res.ref32.seconds += time_call([&] { mla_attention_ref<float>(w.p, w.q, in.latent, in.k_pe, w.kv_b, lc_r, kc_r, t32); });
    res.ref32.add("latent_cache", lc_want, lc_r, 0.0);
    res.ref32.add("kpe_cache", kc_want, kc_r, 0.0);
    const std::vector<double> b = mla_attention_bound(w.p, w.q, w.kv_b, lc_want, kc_want, MlaRounding{kMlaFastChunk});
    for (int64_t t = 0; t < p.tokens; ++t) {
      const int64_t off = t * n * Dv, full = (t * p.heads + h0) * Dv;
      truth.insert(truth.end(), t64.begin() + off, t64.begin() + off + n * Dv);
      r32.insert(r32.end(), t32.begin() + off, t32.begin() + off + n * Dv);
      fast.insert(fast.end(), fast_all.begin() + full, fast_all.begin() + full + n * Dv);
      bound.insert(bound.end(), b.begin() + off, b.begin() + off + n * Dv);
    }
  }
  res.ref32.add("o", truth, r32, bound);
  res.fast.add("o", truth, fast, bound);
  return res;
}

namespace {

MlaAttentionParams shape(int64_t T, int64_t H, int64_t Dn, int64_t Dr, int64_t Dv, int64_t L, int64_t past, int bits,
                         int group, float scale = 0.0f) {
  return {T, H, Dn, Dr, Dv, L, past, past + T + 2, bits, group, scale};
}

// Cogito-V2-671B / DeepSeek-V3: 128 heads, qk_nope 128, qk_rope 64, v 128, kv_lora_rank 512,
// kv_b_proj 4-bit group 64 in the MLX checkpoints; YaRN softmax scale (1/sqrt(192)) mscale^2
// with mscale = 0.1 ln 40 + 1.
MlaAttentionParams cogito(int64_t T, int64_t past, int bits = 4) {
  const double mscale = 0.1 * std::log(40.0) + 1.0;
  return shape(T, 128, 128, 64, 128, 512, past, bits, 64, float(mscale * mscale / std::sqrt(192.0)));
}

}  // namespace

std::vector<CheckResult> mla_attention_check(uint64_t seed, CheckScope scope) {
  std::vector<CheckResult> out;
  auto add = [&](const std::string& label, const MlaAttentionParams& p, int windows = 0) {
    out.push_back(mla_attention_check_one(label.c_str(), p, seed + uint64_t(out.size()), windows));
  };
  if (scope_has_remainders(scope)) {
    // Odd heads and dims, every bit width, group sizes 8/16/32/4/128 dividing L, decode at kv
    // lengths 1, 2, 31, 33, prefill from empty and after a past, T = 0, an explicit scale.
    for (int64_t past : {0, 1, 30, 32})
      add("remainder H3 Dn5 Dr3 Dv7 L24 4-bit G8 decode len " + std::to_string(past + 1), shape(1, 3, 5, 3, 7, 24, past, 4, 8));
    add("remainder prefill T3 from empty", shape(3, 3, 5, 3, 7, 24, 0, 4, 8));
    add("remainder H5 Dn17 Dr9 Dv11 L96 2-bit G16 prefill T3 past 33", shape(3, 5, 17, 9, 11, 96, 33, 2, 16));
    add("remainder H2 Dn3 Dr1 Dv2 L12 8-bit G4 T2 past 1", shape(2, 2, 3, 1, 2, 12, 1, 8, 4));
    add("remainder H1 Dn33 Dr31 Dv67 L256 4-bit G128 T2 past 5", shape(2, 1, 33, 31, 67, 256, 5, 4, 128));
    add("remainder T0 past 5", shape(0, 3, 5, 3, 7, 24, 5, 4, 8));
    add("remainder explicit scale 0.3", shape(2, 3, 5, 3, 7, 32, 7, 4, 32, 0.3f));
    // The fast tier's chunk boundaries (kMlaFastChunk rows): lengths across 1 -> 2 chunks, 3 chunks.
    add("chunk edge lens 511-514", shape(4, 3, 8, 4, 8, 32, kMlaFastChunk - 2, 4, 32));
    add("three chunks lens 1024-1025", shape(2, 2, 8, 4, 8, 32, 2 * kMlaFastChunk - 1, 4, 32));
  }
  if (scope_has_real(scope)) {
    // The fast tier runs all 128 heads; the scalar tiers (the naive f64 truth expands k and v for
    // every cached row: ~1e8 multiply-adds per head at 300 rows) run on windows of heads.
    add("Cogito decode past 300", cogito(1, 300), 3);
    add("Cogito prefill T 8 past 256", cogito(8, 256), 2);
    add("Cogito prefill T 4 from empty", cogito(4, 0), 3);
    add("Cogito 8-bit kv_b decode past 200", cogito(1, 200, 8), 1);
    add("Cogito decode past 1100 (3 fast chunks)", cogito(1, 1100), 1);
  }
  return out;
}

}  // namespace moe
