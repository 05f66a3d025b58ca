#include "spec/mla_attention_spec.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <string>

#include "core/bf16.h"
#include "core/rng.h"
#include "core/test_data.h"
#include "spec/attention_bound.h"
#include "spec/matvec_ggml_spec.h"

namespace moe {

MlaAttentionInputs mla_attention_inputs(const MlaAttentionParams& p, uint64_t seed, double q_gain) {
  const int64_t T = p.tokens, H = p.heads, Dq = p.nope_dim + p.rope_dim, L = p.kv_lora, Dr = p.rope_dim;
  Rng rng(seed);
  MlaAttentionInputs in;
  in.q = rng.fork(1).normal_vec(T * H * Dq, 1.0);
  Rng rgain = rng.fork(2);
  std::vector<double> gain(static_cast<size_t>(H));
  for (double& g : gain) g = 0.25 + 2.25 * rgain.uniform01();
  for (int64_t i = 0; i < T * H * Dq; ++i) in.q[size_t(i)] = float(in.q[size_t(i)] * gain[size_t((i / Dq) % H)] * q_gain);
  const std::vector<float> mean = rng.fork(3).normal_vec(L, 0.5);
  in.latent = keys_around_mean(rng.fork(4), T, mean);
  in.k_pe = rng.fork(5).normal_vec(T * Dr, 1.0);
  in.latent_cache = keys_around_mean(rng.fork(6), p.capacity, mean);
  in.kpe_cache = rng.fork(7).normal_vec(p.capacity * Dr, 1.0);
  for (int64_t i = p.past * L; i < p.capacity * L; ++i) in.latent_cache[size_t(i)] = 1000.0f + float(i % 4096);
  for (int64_t i = p.past * Dr; i < p.capacity * Dr; ++i) in.kpe_cache[size_t(i)] = -7.0f;
  if (p.kv_ggml_type < 0) {
    in.kv_b = random_quant(rng.fork(8), H * (p.nope_dim + p.v_dim), L, p.bits, p.group_size);
  } else {
    in.k_b = matvec_ggml_inputs({p.kv_ggml_type, H * L, p.nope_dim, 1}, rng.fork(8).next_u64(), false).W;
    in.v_b = matvec_ggml_inputs({p.kv_ggml_type, H * p.v_dim, L, 1}, rng.fork(9).next_u64(), false).W;
  }
  return in;
}

MlaKvB MlaAttentionInputs::view(const MlaAttentionParams& p) const {
  if (p.kv_ggml_type < 0) return kv_b.view();
  const uint32_t type = uint32_t(p.kv_ggml_type);
  return {BlockMatrix{type, k_b.data(), p.heads * p.kv_lora, p.nope_dim}, BlockMatrix{type, v_b.data(), p.heads * p.v_dim, p.kv_lora}};
}

void mla_attention_append(const MlaAttentionParams& p, const MlaAttentionInputs& in, std::vector<float>& lc,
                          std::vector<float>& kc) {
  lc = in.latent_cache, kc = in.kpe_cache;
  std::copy(in.latent.begin(), in.latent.end(), lc.begin() + p.past * p.kv_lora);
  std::copy(in.k_pe.begin(), in.k_pe.end(), kc.begin() + p.past * p.rope_dim);
}

std::vector<MlaAttentionShape> mla_attention_shapes(bool remainders, bool real) {
  std::vector<MlaAttentionShape> out;
  // GPU shapes: {T, H, Dn, Dr, Dv, L, past, capacity past + T + 2, bits, group, scale}.
  auto gpu = [&](const char* label, MlaAttentionParams p, uint64_t offset, double q_gain = 1.0, int windows = 0) {
    p.capacity = p.past + p.tokens + 2;
    out.push_back({label, p, offset, {q_gain, windows, true}});
  };
  uint64_t j = 0;  // the CPU check's own shapes: seed offsets 0, 1, 2, ...
  auto cpu = [&](const std::string& label, MlaAttentionParams p, int windows = 0) {
    p.capacity = p.past + p.tokens + 2;
    out.push_back({label, p, j++, {1.0, windows, false}});
  };
  const float mscale = float(0.1 * std::log(40.0) + 1.0);
  const float cogito_scale = float(1.0 / std::sqrt(192.0)) * mscale * mscale;
  auto cogito = [&](int64_t T, int64_t past, int bits = 4) {
    return MlaAttentionParams{T, 128, 128, 64, 128, 512, past, 0, bits, 64, cogito_scale};
  };
  if (remainders) {
    // More rows than a workgroup's 64 (several weight rounds); kv_lora past 512 (more than eight
    // columns per lane); 2 and 8 bits; the default scale; rope and v widths past 64 lanes with
    // scores spread over more than the f32 exp range (a softmax shifted by anything but the true
    // max overflows there). Seed offsets L + past.
    gpu("remainder H 3 Dn 5 Dr 3 Dv 7 L 64 past 0", {1, 3, 5, 3, 7, 64, 0, 0, 4, 32, 0.3f}, 64);
    gpu("remainder H 2 L 128 T 3 past 70 8-bit", {3, 2, 16, 4, 9, 128, 70, 0, 8, 64, 0.25f}, 198);
    gpu("remainder H 5 L 96 T 2 past 129 2-bit", {2, 5, 3, 2, 3, 96, 129, 0, 2, 32, 0.5f}, 225);
    gpu("remainder H 1 L 576 past 5", {1, 1, 8, 8, 8, 576, 5, 0, 4, 64, 0.2f}, 581);
    gpu("remainder scale 0 (1/sqrt(Dn + Dr))", {2, 2, 4, 4, 4, 64, 3, 0, 4, 64, 0.0f}, 67);
    gpu("remainder Dr 129 Dv 130 peaked", {2, 2, 8, 129, 130, 64, 126, 0, 4, 64, 0.5f}, 190, 60.0);
    // Decode at kv lengths 1, 2, 31, 33; group sizes 8/16/4/128 dividing L; T = 0.
    for (int64_t past : {0, 1, 30, 32})
      cpu("remainder H3 Dn5 Dr3 Dv7 L24 4-bit G8 decode len " + std::to_string(past + 1),
          {1, 3, 5, 3, 7, 24, past, 0, 4, 8});
    cpu("remainder prefill T3 from empty", {3, 3, 5, 3, 7, 24, 0, 0, 4, 8});
    cpu("remainder H5 Dn17 Dr9 Dv11 L96 2-bit G16 prefill T3 past 33", {3, 5, 17, 9, 11, 96, 33, 0, 2, 16});
    cpu("remainder H2 Dn3 Dr1 Dv2 L12 8-bit G4 T2 past 1", {2, 2, 3, 1, 2, 12, 1, 0, 8, 4});
    cpu("remainder H1 Dn33 Dr31 Dv67 L256 4-bit G128 T2 past 5", {2, 1, 33, 31, 67, 256, 5, 0, 4, 128});
    cpu("remainder T0 past 5", {0, 3, 5, 3, 7, 24, 5, 0, 4, 8});
    cpu("remainder explicit scale 0.3", {2, 3, 5, 3, 7, 32, 7, 0, 4, 32, 0.3f});
    // The fast tier's chunk boundaries (kMlaFastChunk rows): lengths across 1 -> 2 chunks, 3 chunks.
    cpu("chunk edge lens 511-514", {4, 3, 8, 4, 8, 32, kMlaFastChunk - 2, 0, 4, 32});
    cpu("three chunks lens 1024-1025", {2, 2, 8, 4, 8, 32, 2 * kMlaFastChunk - 1, 0, 4, 32});
    // llama.cpp's k_b / v_b (GGUF deepseek2): whole blocks along Dn (k_b) and L (v_b).
    for (int64_t type : {0, 1, 30, 2, 8})
      cpu("remainder GGUF k_b/v_b type " + std::to_string(type) + " H3 Dn32 L64 T2 past 9",
          {2, 3, 32, 3, 7, 64, 9, 0, 4, 64, 0.3f, type});
    cpu("remainder GGUF q4_K v_b-width k_b H2 Dn256 L256 T1 past 3", {1, 2, 256, 5, 3, 256, 3, 0, 4, 64, 0.0f, 12});
  }
  if (real) {
    // The CPU's scalar tiers run on windows of heads (the naive f64 truth expands k and v for
    // every cached row: ~1e8 multiply-adds per head at 300 rows); the fast tier on all 128.
    gpu("Cogito decode T 1 past 100", cogito(1, 100), 0, 1.0, 1);
    gpu("Cogito prefill T 4 past 20", cogito(4, 20), 1, 1.0, 1);
    cpu("Cogito decode past 300", cogito(1, 300), 3);
    cpu("Cogito prefill T 8 past 256", cogito(8, 256), 2);
    cpu("Cogito prefill T 4 from empty", cogito(4, 0), 3);
    cpu("Cogito 8-bit kv_b decode past 200", cogito(1, 200, 8), 1);
    cpu("Cogito decode past 1100 (3 fast chunks)", cogito(1, 1100), 1);
    MlaAttentionParams gguf = cogito(1, 300);
    gguf.kv_ggml_type = 8;  // q8_0: what llama.cpp's DeepSeek GGUFs commonly keep k_b / v_b in
    cpu("Cogito GGUF q8_0 k_b/v_b decode past 300", gguf, 1);
  }
  return out;
}

namespace {

using MatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

}  // namespace

std::vector<double> mla_attention_bound(const MlaAttentionParams& p, std::span<const float> q, const MlaKvB& kv_b,
                                        std::span<const float> lat, std::span<const float> kpe, int64_t chunk,
                                        const PrecisionModel& m) {
  const int64_t T = p.tokens, H = p.heads, Dn = p.nope_dim, Dr = p.rope_dim, Dv = p.v_dim, L = p.kv_lora;
  const double u = m.u;
  const double scale = p.scale != 0.0f ? double(p.scale) : 1.0 / std::sqrt(double(Dn + Dr));
  const double g_q = m.sum(double(Dn + 1)), g_s = m.sum(double(L + Dr)), g_o = m.sum(double(L + 1));
  const int64_t rows = p.past + T;
  MatD Lat(rows, L), Kpe(rows, Dr);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < L; ++c) Lat(r, c) = lat[size_t(r * L + c)];
    for (int64_t j = 0; j < Dr; ++j) Kpe(r, j) = kpe[size_t(r * Dr + j)];
  }
  const MatD LatAbs = Lat.cwiseAbs(), KpeAbs = Kpe.cwiseAbs();
  const Eigen::VectorXd lat_row_sums = LatAbs.rowwise().sum();
  std::vector<double> bound(size_t(T * H * Dv));
  // Heads are independent and write disjoint parts of `bound`.
#pragma omp parallel for schedule(dynamic) if (H > 1 && rows * L >= (1 << 14))
  for (int64_t h = 0; h < H; ++h) {
    MatD wk(Dn, L), wv(Dv, L);  // exact (mla_kv_b_head in double)
    mla_kv_b_head<double>(p, kv_b, h, wk.data(), wv.data());
    const MatD wvAbs = wv.cwiseAbs(), wkAbs = wk.cwiseAbs();
    for (int64_t t = 0; t < T; ++t) {
      const int64_t len = p.past + t + 1;
      const float* qh = q.data() + (t * H + h) * (Dn + Dr);
      Eigen::VectorXd qn(Dn), qpe(Dr);
      for (int64_t d = 0; d < Dn; ++d) qn[d] = qh[d];
      for (int64_t j = 0; j < Dr; ++j) qpe[j] = qh[Dn + j];
      const Eigen::VectorXd qp = wk.transpose() * qn, qa = wkAbs.transpose() * qn.cwiseAbs();
      const auto lt = LatAbs.topRows(len);
      const Eigen::VectorXd A = lt * qa, C = lt * qp.cwiseAbs(), B = KpeAbs.topRows(len) * qpe.cwiseAbs();
      const Eigen::VectorXd s = (Lat.topRows(len) * qp + Kpe.topRows(len) * qpe) * scale;
      const Eigen::VectorXd E = scale * (g_q * (1 + g_s) * A + g_s * (C + B));
      const double Fmax = (scale * (C + B) + E).maxCoeff();
      const double Ds = E.maxCoeff() + u * Fmax +
                        scale * kMinNormal32 * (double(Dn) * lat_row_sums.head(len).maxCoeff() + double(L + Dr + 1));
      const SoftmaxRowBound w =
          softmax_row_bound(s, exponent_error(Ds, Fmax, p.scale == 0.0f, chunk > 0, m), chunk, m);
      const Eigen::VectorXd Pe = w.P.cwiseProduct(w.eta);
      const MatD vabs = (Lat.topRows(len) * wv.transpose()).cwiseAbs();                          // |v_p[e]|
      const Eigen::VectorXd Wp = vabs.transpose() * w.P, We = vabs.transpose() * Pe;                // [Dv]
      const Eigen::VectorXd Z = wvAbs * (lt.transpose() * (w.P + Pe));                              // [Dv]
      const Eigen::VectorXd Y = wvAbs * (Eigen::VectorXd::Ones(L) + lt.colwise().sum().transpose());  // [Dv]
      for (int64_t e = 0; e < Dv; ++e)
        bound[size_t((t * H + h) * Dv + e)] = We[e] + 2 * kU32 * Wp[e] + (w.gam + g_o * (1 + w.gam)) * Z[e] +
                                              0x1.0p-125 * Y[e] * (1 + g_o) + double(L + 1) * kMinNormal32;
    }
  }
  return bound;
}

}  // namespace moe
