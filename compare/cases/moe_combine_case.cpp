#include <cmath>
#include <string>

#include "compare/cases/bound_mode.h"
#include "compare/cases/case_util.h"
#include "compare/decide/precision.h"
#include "compare/cases/instances.h"
#include "core/math.h"
#include "core/rng.h"
#include "ops/moe_combine.h"

namespace moe::compare {

// ---- moe_combine: inputs as the op's self-check: h_mid activations with outlier channels,
// expert and shared outputs N(0, 1), gate logits N(0, 2^2), router weights positive and
// renormalised to sum 1 per token. e holds a token's K expert rows in one buffer [K, dim].
OpCase moe_combine_instance(const std::string& label, uint64_t seed, const MoeCombineParams& p,
                            std::span<const float> h, std::span<const float> e, std::span<const float> w,
                            std::span<const float> sh, std::span<const float> gamma) {
  OpCase c = new_case("moe_combine", label, seed);
  set_vars(c, p);
  const int64_t T = p.tokens, d = p.dim, K = p.k;
  const bool gated = p.gated;
  std::vector<float> out(static_cast<size_t>(T * d));
  moe_combine_ref<double>(p, h, e, w, sh, gamma, out);
  c.tensors["h_mid"] = f32_tensor(h);
  c.tensors["e"] = f32_tensor(e);
  c.tensors["w"] = f32_tensor(w);
  c.tensors["sh"] = f32_tensor(sh);
  c.tensors["gamma"] = f32_tensor(gamma);  // present ungated too; a kernel must not need it then
  c.tensors["out"] = output_f32(T * d);
  // Bound in f32 accumulation, any order, fused or not (first order in u; the u^2 terms are far
  // below the slack below). out sums K + 2 terms h, w_k e_k and sh*sig: each product rounds at
  // most once (or is fused) and a term meets at most K + 1 additions in any order, so
  // gamma_{K+2} * (|h| + sum |w_k e_k| + |sh sig|) covers the sum. The GPU sigmoid
  // 1 / (1 + exp(-gamma)) relies on the Vulkan precision rules: exp within 3 + 2|gamma| ULP,
  // one ULP <= 2u relative, so (6 + 4|gamma|)u; 1 + E rounds once (u; E's relative error
  // passes through 1 + E scaled by E / (1 + E) <= 1); the division 2.5 ULP = 5u. Together
  // (12 + 4|gamma|)u relative on sig, so + (13 + 4|gamma|)u |sh sig| with 1u of slack (ungated:
  // sig = 1 exactly, nothing). The truth (f64, rounded once to f32) adds u |out|; the smallest
  // normal floors results near underflow (and flushed subnormal products). exp and division come
  // from decide/precision.h: the rules above, or the device's calibrated budgets.
  OutputSpec s;
  s.name = "out", s.kind = Kind::Reduction;
  const double g = sum_gamma(double(K + 2));
  for (int64_t t = 0; t < T; ++t) {
    const double sig = gated ? sigmoid(double(gamma[size_t(t)])) : 1.0;
    const double sig_rel = gated ? exp_rel(double(gamma[size_t(t)])) + division_rel() + 2 * kU32 : 0.0;
    for (int64_t i = 0; i < d; ++i) {
      double terms = std::fabs(double(h[size_t(t * d + i)]));
      for (int64_t j = 0; j < K; ++j)
        terms += std::fabs(double(w[size_t(t * K + j)]) * double(e[size_t((t * K + j) * d + i)]));
      const double shg = std::fabs(double(sh[size_t(t * d + i)]) * sig);
      s.bound.push_back(g * (terms + shg) + sig_rel * shg + kU32 * std::fabs(double(out[size_t(t * d + i)])) +
                        kMinNormal32);
    }
  }
  c.outputs["out"] = s;
  c.truth["out"] = widen(out);
  return c;
}

namespace {

OpCase moe_combine_case(const std::string& label, int64_t tokens, int64_t dim, int64_t k, bool gated,
                        uint64_t seed) {
  MoeCombineParams p;
  p.tokens = tokens, p.dim = dim, p.k = k, p.gated = gated;
  const int64_t T = tokens, d = dim, K = k;
  Rng rng(seed);
  const std::vector<float> h = rng.fork(1).activations(T * d);
  const std::vector<float> e = rng.fork(2).normal_vec(T * K * d, 1.0);
  const std::vector<float> sh = rng.fork(3).normal_vec(T * d, 1.0);
  const std::vector<float> gamma = rng.fork(4).normal_vec(T, 2.0);
  std::vector<float> w = rng.fork(5).uniform_vec(T * K, 0.01f, 1.0f);
  for (int64_t t = 0; t < T; ++t) {
    float s = 0;
    for (int64_t j = 0; j < K; ++j) s += w[size_t(t * K + j)];
    for (int64_t j = 0; j < K; ++j) w[size_t(t * K + j)] /= s;
  }
  return moe_combine_instance(label, seed, p, h, e, w, sh, gamma);
}

}  // namespace

std::vector<OpCase> moe_combine_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  if (rem) {
    // dim around the 256-wide workgroups; K 1 and 3, gated and ungated; no routed experts (K 0).
    for (int64_t dim : {1, 31, 257, 4099}) {
      const std::string d = "remainder dim " + std::to_string(dim);
      out.push_back(moe_combine_case(d + " K 1", 3, dim, 1, true, seed + uint64_t(dim)));
      out.push_back(moe_combine_case(d + " K 3", 3, dim, 3, true, seed + uint64_t(dim) + 1));
      out.push_back(moe_combine_case(d + " K 3 ungated", 3, dim, 3, false, seed + uint64_t(dim) + 2));
    }
    out.push_back(moe_combine_case("no routed experts (K 0)", 2, 33, 0, true, seed + 3));
    // Past the limits engines size for, one token (decode): K above the models' 10 and the
    // Metal capacity 16 (17, 33), and rows past 8192 and 16384 at the A17B K 10.
    out.push_back(moe_combine_case("remainder T 1 dim 257 K 17", 1, 257, 17, true, seed + 17));
    out.push_back(moe_combine_case("remainder T 1 dim 67 K 33 ungated", 1, 67, 33, false, seed + 33));
    out.push_back(moe_combine_case("remainder T 1 dim 8257 K 10", 1, 8257, 10, true, seed + 8257));
    // K 8 (the common top-k that decode kernels compile in) at a dim that is no multiple of any
    // workgroup width: invocations past the end of the row must do nothing.
    out.push_back(moe_combine_case("remainder T 1 dim 4099 K 8", 1, 4099, 8, true, seed + 4099));
    out.push_back(moe_combine_case("remainder T 1 dim 16411 K 10", 1, 16411, 10, true, seed + 16411));
  }
  if (real) {
    out.push_back(moe_combine_case("A17B K 10", 1, 4096, 10, true, seed));
    out.push_back(moe_combine_case("A17B engine K 4", 1, 4096, 4, true, seed + 1));
    out.push_back(moe_combine_case("A3B K 8", 1, 2048, 8, true, seed + 2));
    out.push_back(moe_combine_case("Metal capacity K 16", 1, 2048, 16, true, seed + 3));
    out.push_back(moe_combine_case("A3B prefill 64 tokens K 8", 64, 2048, 8, true, seed + 4));
    out.push_back(moe_combine_case("DeepSeek-V3 ungated K 8", 1, 7168, 8, false, seed + 5));
  }
  return out;
}

}  // namespace moe::compare
