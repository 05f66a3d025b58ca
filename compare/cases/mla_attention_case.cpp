#include <cmath>
#include <string>

#include "compare/cases/case_util.h"
#include "compare/cases/instances.h"
#include "compare/decide/precision.h"
#include "core/rng.h"
#include "core/test_data.h"
#include "ops/mla_attention.h"

namespace moe::compare {
namespace {

// A kernel's softmax weight P = exp(s - m) / l: its own exp and the normaliser's exps (each
// within the device's exp budget at the exponent's magnitude), the division and the product,
// beyond the sums' gamma (which mla_attention_bound counts).
double gpu_weight_rel(double exponent_span) { return 2 * exp_rel(exponent_span) + division_rel() + 4 * kU32; }

}  // namespace

// Bound: mla_attention_bound's derivation (kernels_cpu/check/mla_attention_check.cpp: every sum
// in any order, weights dequantised with one rounding — exact for code * s, so fused or not —
// the absorbed form against HF's naive f64 truth), with one pass over the rows (sums in any
// order, a fixed tree or chunks of 64 included: gamma of the row count), the device's exp and
// division budgets for the weights (decide/precision.h) and underflowed products at the smallest
// normal (a device may flush subnormals). The caches after the append are compared bit for bit.
OpCase mla_attention_instance(const std::string& label, uint64_t seed, const MlaAttentionParams& p,
                              std::span<const float> q, std::span<const float> latent, std::span<const float> k_pe,
                              const QuantMatrix& kv_b, std::span<const float> latent_cache,
                              std::span<const float> kpe_cache) {
  OpCase c = new_case("mla_attention", label, seed);
  set_vars(c, p);
  // The scale a kernel is handed (the op's 0 means 1/sqrt(Dn + Dr)).
  c.vars["softmax_scale"] = p.scale != 0.0f ? double(p.scale) : double(1.0f / std::sqrt(float(p.nope_dim + p.rope_dim)));
  std::vector<float> lc(latent_cache.begin(), latent_cache.end()), kc(kpe_cache.begin(), kpe_cache.end());
  const int64_t n = p.tokens * p.heads * p.v_dim;
  std::vector<float> o(static_cast<size_t>(n));
  mla_attention_ref<double>(p, q, latent, k_pe, kv_b, lc, kc, o);
  c.tensors["q"] = f32_tensor(q);
  c.tensors["latent"] = f32_tensor(latent);
  c.tensors["k_pe"] = f32_tensor(k_pe);
  c.tensors["latent_cache"] = f32_tensor(latent_cache);
  c.tensors["kpe_cache"] = f32_tensor(kpe_cache);
  add_quant_tensors(c, "kv_b", kv_b);
  c.tensors["o"] = output_f32(n);
  MlaRounding r;
  r.chunk = 0, r.weight_rel = &gpu_weight_rel, r.tiny = kMinNormal32;
  OutputSpec s;
  s.name = "o", s.kind = Kind::Reduction;
  s.bound = mla_attention_bound(p, q, kv_b, lc, kc, r);
  c.outputs["o"] = s;
  c.truth["o"] = widen(o);
  set_exact_output(c, "latent_cache", lc);
  set_exact_output(c, "kpe_cache", kc);
  return c;
}

namespace {

struct Shape {
  const char* label;
  int64_t H, Dn, Dr, Dv, L, T, past;
  int bits, group_size;
  float scale;
  double q_gain = 1.0;  // q scaled by this: peaked attention, scores over a range of ~100
};

// Inputs with a real MLA layer's statistics (as mla_attention_check): q ~ N(0, 1) with a per-head
// gain in [0.25, 2.5] (flat to peaked attention), latents RMS-normalised around a shared
// per-channel mean, k_pe ~ N(0, 1), kv_b an MLX-quantised Gaussian; cache rows from `past` on
// hold junk the append must replace.
OpCase mla_case(const Shape& sh, uint64_t seed) {
  MlaAttentionParams p;
  p.tokens = sh.T, p.heads = sh.H, p.nope_dim = sh.Dn, p.rope_dim = sh.Dr, p.v_dim = sh.Dv, p.kv_lora = sh.L;
  p.past = sh.past, p.capacity = sh.past + sh.T + 2, p.bits = sh.bits, p.group_size = sh.group_size;
  p.scale = sh.scale;
  const int64_t Dq = sh.Dn + sh.Dr;
  Rng rng(seed);
  std::vector<float> q = rng.fork(1).normal_vec(sh.T * sh.H * Dq, 1.0);
  Rng rgain = rng.fork(2);
  std::vector<double> gain(static_cast<size_t>(sh.H));
  for (double& g : gain) g = 0.25 + 2.25 * rgain.uniform01();
  for (int64_t i = 0; i < int64_t(q.size()); ++i)
    q[size_t(i)] = float(q[size_t(i)] * gain[size_t((i / Dq) % sh.H)] * sh.q_gain);
  const std::vector<float> mean = rng.fork(3).normal_vec(sh.L, 0.5);
  auto latents = [&](Rng r, int64_t rows) {
    std::vector<float> x = r.normal_vec(rows * sh.L, 1.0);
    for (int64_t i = 0; i < rows * sh.L; ++i) x[size_t(i)] += mean[size_t(i % sh.L)];
    return x;
  };
  const std::vector<float> latent = latents(rng.fork(4), sh.T);
  const std::vector<float> k_pe = rng.fork(5).normal_vec(sh.T * sh.Dr, 1.0);
  std::vector<float> lc = latents(rng.fork(6), p.capacity), kc = rng.fork(7).normal_vec(p.capacity * sh.Dr, 1.0);
  for (int64_t i = sh.past * sh.L; i < p.capacity * sh.L; ++i) lc[size_t(i)] = 1000.0f + float(i % 4096);
  for (int64_t i = sh.past * sh.Dr; i < p.capacity * sh.Dr; ++i) kc[size_t(i)] = -7.0f;
  const QuantStorage kv_b = random_quant(rng.fork(8), sh.H * (sh.Dn + sh.Dv), sh.L, sh.bits, sh.group_size);
  return mla_attention_instance(sh.label, seed, p, q, latent, k_pe, kv_b.view(), lc, kc);
}

}  // namespace

std::vector<OpCase> mla_attention_cases(bool rem, bool real, uint64_t seed) {
  // Cogito-V2 / DeepSeek-V3: 128 heads, nope 128, rope 64, v 128, kv_lora 512, 4-bit groups of
  // 64; HF's scale 192^-1/2 mscale^2 with mscale = 0.1 ln 40 + 1.
  const float mscale = float(0.1 * std::log(40.0) + 1.0);
  const float cogito_scale = float(1.0 / std::sqrt(192.0)) * mscale * mscale;
  std::vector<OpCase> out;
  if (rem) {
    // Odd head counts and widths; more rows than a workgroup's 64 (several weight rounds);
    // kv_lora past 512 (more than eight columns per lane); 2 and 8 bits; the default scale;
    // rope and v widths past 64 lanes with scores spread over more than the f32 exp range (a
    // softmax shifted by anything but the true max overflows there).
    const Shape shapes[] = {
        {"remainder H 3 Dn 5 Dr 3 Dv 7 L 64 past 0", 3, 5, 3, 7, 64, 1, 0, 4, 32, 0.3f},
        {"remainder H 2 L 128 T 3 past 70 8-bit", 2, 16, 4, 9, 128, 3, 70, 8, 64, 0.25f},
        {"remainder H 5 L 96 T 2 past 129 2-bit", 5, 3, 2, 3, 96, 2, 129, 2, 32, 0.5f},
        {"remainder H 1 L 576 past 5", 1, 8, 8, 8, 576, 1, 5, 4, 64, 0.2f},
        {"remainder scale 0 (1/sqrt(Dn + Dr))", 2, 4, 4, 4, 64, 2, 3, 4, 64, 0.0f},
        {"remainder Dr 129 Dv 130 peaked", 2, 8, 129, 130, 64, 2, 126, 4, 64, 0.5f, 60.0},
    };
    for (const Shape& sh : shapes) out.push_back(mla_case(sh, seed + uint64_t(sh.L + sh.past)));
  }
  if (real) {
    out.push_back(mla_case({"Cogito decode T 1 past 100", 128, 128, 64, 128, 512, 1, 100, 4, 64, cogito_scale}, seed));
    out.push_back(mla_case({"Cogito prefill T 4 past 20", 128, 128, 64, 128, 512, 4, 20, 4, 64, cogito_scale}, seed + 1));
  }
  return out;
}

}  // namespace moe::compare
