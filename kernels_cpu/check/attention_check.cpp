#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <string>

#include "core/math.h"
#include "core/params.h"
#include "core/rng.h"
#include "ops/attention.h"

namespace moe {
namespace {

// Seeded inputs with the statistics of a real layer: q and k are RMS-normalised per head (entries
// ~ N(0, 1) times a norm weight), each query head with its own gain in [0.25, 2.5] so heads range
// from nearly flat attention (score spread ~0.3) to peaked (~3); keys share a per-head mean
// direction across positions as real keys do; v are activations (N(0, 1) with outlier lanes);
// gate ~ N(0, 2). Cache rows at and past `past` start as junk: the op must overwrite
// [past, past + T) and leave the rest alone.
struct Inputs {
  std::vector<float> q, gate, k, v, k_cache, v_cache;
};

Inputs make_inputs(const AttentionParams& p, uint64_t seed) {
  const int64_t T = p.tokens, H = p.q_heads, Hkv = p.kv_heads, D = p.head_dim, row = Hkv * D;
  Rng rng(seed);
  Inputs in;
  Rng rq = rng.fork(1), rgain = rng.fork(2);
  in.q = rq.normal_vec(T * H * D, 1.0);
  std::vector<double> gain(H);
  for (auto& x : gain) x = 0.25 + 2.25 * rgain.uniform01();
  for (int64_t i = 0; i < T * H * D; ++i) in.q[i] = float(in.q[i] * gain[(i / D) % H]);
  in.gate = rng.fork(3).normal_vec(T * H * D, 2.0);
  const std::vector<float> key_mean = rng.fork(4).normal_vec(row, 0.5);
  auto keys = [&](Rng r, int64_t rows) {
    std::vector<float> x = r.normal_vec(rows * row, 1.0);
    for (int64_t i = 0; i < rows * row; ++i) x[i] += key_mean[i % row];
    return x;
  };
  in.k = keys(rng.fork(5), T);
  in.v = rng.fork(6).activations(T * row);
  in.k_cache = keys(rng.fork(7), p.capacity);
  in.v_cache = rng.fork(8).activations(p.capacity * row);
  for (int64_t i = p.past * row; i < p.capacity * row; ++i) in.k_cache[i] = 1000.0f + float(i), in.v_cache[i] = -7.0f;
  return in;
}

// Per-element error bound of an f32 output against the f64 truth, covering both the f32 tier
// and the fast tier (chunked online softmax). u = 2^-24. For one (t, h) with len = past+t+1 rows,
// exact scores s_p, weights P_p = softmax(s)_p, A_p = scale * sum_d |q_d K_pd|:
//  * exponent-level error: the dot in any order (sequential fma or Eigen) errs by at most
//    gamma_D * sum|q k| (times scale); the scale multiply (or the pre-scaled q) adds u A_p; the
//    f32 scale 1/sqrtf(D) is within 2u of 1/sqrt(D); the subtraction s - m (m a computed chunk
//    max) rounds by u |s - m| <= 2u A_max; the fast tier's m_c - M rounds by another 2u A_max.
//    So every exponent is off by at most Delta = (gamma_D + 7u) A_max.
//  * exact softmax of exponents each off by at most Delta is within a factor exp(+-2 Delta)
//    of P (the numerator moves by e^delta_p, the normaliser by a weighted mean of e^delta_i).
//  * multiplicative weight errors: exp within 2 ulp (4u) for e_p and again for the fast tier's
//    chunk factor alpha_c = exp(m_c - M): 8u; the normaliser L (the f32 tier's sequential sum
//    of len positive terms: gamma_{len-1}; the fast tier's per-chunk sums gamma_{n-1}, alpha_c *
//    l_c u, the sum over nc chunks gamma_{nc-1}) is within gamma_{len+nc}; 1/L and the multiply
//    by it 2u. Together the computed weights are P_p (1 + eta_p) with
//    |eta_p| <= rho = exp(2 Delta) (1 + gamma_{len+nc} + 10u) - 1.
//  * the output sum of len products (sequential: gamma_len; the fast tier: Eigen's product over
//    a chunk's n rows gamma_n, alpha_c * O_c u, the sum over chunks gamma_{nc-1}) errs by at most
//    gamma_{len+nc} sum_p |P^_p v_pd| <= gamma_{len+nc} (1 + rho) W_d, W_d = sum_p P_p |v_pd|,
//    and the weight errors add rho W_d.
//  * the gate: expf 4u, the 1 + and the division 2u, the multiply u, the truth's rounding to f32
//    u, its own f64 error (< 2^-35 relative) u: 9u |o| sig, with |o| <= W_d.
//  * exp results below the f32 normal range (a weight under 2^-126 may become 0 or subnormal,
//    a sigmoid of a gate < -87 may become 0) err by at most 2^-126 absolute each, over at most
//    len weights: 2 * 2^-126 * (1 + sum_p |v_pd|).
//  bound = sig(g) W_d (rho + gamma_{len+nc} (1 + rho) + 9u) + 2^-125 (1 + sum_p |v_pd|).
// The ingredients (s, A, P, W) are computed here in f64 with Eigen, independently of the tiers.
std::vector<double> error_bound(const AttentionParams& p, const Inputs& in, std::span<const float> k_cache,
                                std::span<const float> v_cache) {
  const int64_t T = p.tokens, H = p.q_heads, Hkv = p.kv_heads, D = p.head_dim, G = H / Hkv, row = Hkv * D;
  const double u = kU32;
  const double scale = p.scale != 0.0f ? double(p.scale) : 1.0 / std::sqrt(double(D));
  using RowMatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  std::vector<double> bound(T * H * D);
  const int64_t rows = p.past + T;
  for (int64_t g = 0; g < Hkv; ++g) {
    RowMatD K(rows, D), V(rows, D);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t d = 0; d < D; ++d) K(r, d) = k_cache[r * row + g * D + d], V(r, d) = v_cache[r * row + g * D + d];
    const RowMatD Kabs = K.cwiseAbs(), Vabs = V.cwiseAbs();
    // Tokens are independent and write disjoint parts of `bound`.
#pragma omp parallel for schedule(dynamic) if (T > 1 && rows * D >= (1 << 16))
    for (int64_t t = 0; t < T; ++t) {
      const int64_t len = p.past + t + 1;
      const int64_t nc = (len + kAttentionFastChunk - 1) / kAttentionFastChunk;
      const double gam = gamma_n(double(len + nc));
      Eigen::MatrixXd Q(D, G);
      for (int64_t j = 0; j < G; ++j)
        for (int64_t d = 0; d < D; ++d) Q(d, j) = in.q[(t * H + g * G + j) * D + d];
      const Eigen::MatrixXd S = (K.topRows(len) * Q) * scale;
      const Eigen::MatrixXd A = (Kabs.topRows(len) * Q.cwiseAbs()) * scale;
      Eigen::MatrixXd P = (S.rowwise() - S.colwise().maxCoeff()).array().exp().matrix();
      P = P.array().rowwise() / P.colwise().sum().array();
      const Eigen::MatrixXd W = Vabs.topRows(len).transpose() * P;  // D x G
      const Eigen::VectorXd V1 = Vabs.topRows(len).colwise().sum().transpose();
      for (int64_t j = 0; j < G; ++j) {
        const double delta = (gamma_n(double(D)) + 7 * u) * A.col(j).maxCoeff();
        const double rho = std::exp(2 * delta) * (1 + gam + 10 * u) - 1;
        const int64_t base = (t * H + g * G + j) * D;
        for (int64_t d = 0; d < D; ++d) {
          const double sig = sigmoid(double(in.gate[base + d]));
          bound[base + d] = sig * W(d, j) * (rho + gam * (1 + rho) + 9 * u) + 2 * kMinNormal32 * (1 + V1(d));
        }
      }
    }
  }
  return bound;
}

}  // namespace

CheckResult attention_check_one(const char* label, const AttentionParams& p, uint64_t seed) {
  const Inputs in = make_inputs(p, seed);
  const int64_t row = p.kv_heads * p.head_dim;
  // The caches after the append: rows [past, past + T) replaced by k and v, the rest untouched.
  std::vector<float> kc_want = in.k_cache, vc_want = in.v_cache;
  std::copy(in.k.begin(), in.k.end(), kc_want.begin() + p.past * row);
  std::copy(in.v.begin(), in.v.end(), vc_want.begin() + p.past * row);

  std::vector<float> truth(in.q.size()), r32(in.q.size()), fast(in.q.size());
  std::vector<float> kc_t = in.k_cache, vc_t = in.v_cache, kc_r = in.k_cache, vc_r = in.v_cache;
  std::vector<float> kc_f = in.k_cache, vc_f = in.v_cache;
  CheckResult res{"attention", label, params_to_string(p), seed};
  res.truth_seconds = time_call([&] { attention_ref<double>(p, in.q, in.gate, in.k, in.v, kc_t, vc_t, truth); });
  res.ref32.seconds = time_call([&] { attention_ref<float>(p, in.q, in.gate, in.k, in.v, kc_r, vc_r, r32); });
  res.fast.seconds = time_call([&] { attention_fast(p, in.q, in.gate, in.k, in.v, kc_f, vc_f, fast); });

  const std::vector<double> bound = error_bound(p, in, kc_want, vc_want);
  res.ref32.add("o", truth, r32, bound);
  res.fast.add("o", truth, fast, bound);
  // The append is data movement: bit-exact (bound 0), rows outside [past, past + T) unchanged.
  res.ref32.add("k_cache", kc_want, kc_r, 0.0);
  res.ref32.add("v_cache", vc_want, vc_r, 0.0);
  res.fast.add("k_cache", kc_want, kc_f, 0.0);
  res.fast.add("v_cache", vc_want, vc_f, 0.0);
  return res;
}

std::vector<CheckResult> attention_check(uint64_t seed, CheckScope scope) {
  std::vector<CheckResult> out;
  auto add = [&](const std::string& label, int64_t H, int64_t Hkv, int64_t D, int64_t past, int64_t T, float scale = 0) {
    const AttentionParams p{T, H, Hkv, D, past, past + T + 2, scale};
    out.push_back(attention_check_one(label.c_str(), p, seed + uint64_t(out.size())));
  };
  if (scope_has_remainders(scope)) {
    // kv lengths 1, 2, 31, 32, 33 and a few hundred, one token each, over three head layouts
    // (G = 2, 3, 1 query heads per kv head; D = 64, 33, 31).
    for (int64_t len : {1, 2, 31, 32, 33, 300}) {
      add("remainder len " + std::to_string(len) + " G2 D64", 4, 2, 64, len - 1, 1);
      add("remainder len " + std::to_string(len) + " G3 D33", 3, 1, 33, len - 1, 1);
    }
    add("remainder lens 1-3 G1 D31", 2, 2, 31, 0, 3);
    add("remainder lens 31-33 G3 D33", 3, 1, 33, 30, 3);
    // The fast tier's chunk boundaries (kAttentionFastChunk rows): 1, 2 and 3 chunks.
    add("chunk edge lens 1023-1026 G2 D64", 4, 2, 64, kAttentionFastChunk - 2, 4);
    add("three chunks lens 2048-2049 G3 D33", 3, 1, 33, 2 * kAttentionFastChunk - 1, 2);
    add("explicit scale 0.1 G1 D31", 2, 2, 31, 40, 2, 0.1f);
  }
  if (scope_has_real(scope)) {
    for (int64_t past : {0, 4095, 8191}) {
      for (int64_t T : {1, 8}) {
        const std::string at = " past " + std::to_string(past) + " T " + std::to_string(T);
        add("A17B (H32 Hkv2 D256)" + at, 32, 2, 256, past, T);
        add("A3B (H16 Hkv2 D256)" + at, 16, 2, 256, past, T);
      }
    }
    // kv_len 8191, the last length the Metal GPU path takes (docs/ops/attention.md "GPU attention paths",
    // docs/ops/verification.md "Attention lengths and positions"); 8192 above.
    add("A17B (H32 Hkv2 D256) kv_len 8191", 32, 2, 256, 8190, 1);
  }
  return out;
}

}  // namespace moe
