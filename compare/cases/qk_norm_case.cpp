#include <cmath>

#include "compare/cases/bound_mode.h"
#include "compare/cases/case_util.h"
#include "compare/cases/instances.h"
#include "core/rng.h"
#include "ops/qk_norm.h"

namespace moe::compare {

// ---- qk_norm: q and k as they leave the conv's SiLU (activations with x20 outlier channels),
// every 5th head shrunk by 1e-3 so that eps (1e-6 against a mean square of ~1e-6) takes part.
//
// Bound in f32 accumulation, any summation order, relative to |y_true|, first order in
// u = 2^-24; one ULP of a value is at most 2u of it (Vulkan precision rules, as relied on):
//   ss = sum of dk squares: gamma_dk in any order, FMA or not; the inverse square root halves
//     it: gamma_dk / 2.
//   ss / dk: division 2.5 ULP = 5u, or ss * (1/dk): 5u + u; halved: 3u.
//   + eps: one rounding of a sum of non-negatives: u, halved: 0.5u.
//   inversesqrt: 2 ULP = 4u (a kernel using 1 / sqrt(.) is outside this budget: Vulkan's sqrt
//     is inherited from 1/inversesqrt, 14u in all).
//   inv: gamma_dk / 2 + 7.5u.
//   Scales: s = inversesqrt(dk): 4u; q's 1/dk as s*s: 2*4u + u = 9u (or 1.0/dk: 5u); two more
//     products per element (x*inv then *scale, or x*(inv*scale)): 2u. q: 11u, k: 6u.
//     (The engines' q*inv*s*s, three left-associated products: 3u + 2*4u = 11u.)
//   The truth's own rounding to f32: u.
// q: gamma_dk/2 + 19.5u, k: gamma_dk/2 + 14.5u, times |y_true|, plus the smallest normal for
// results in the subnormal range (a device may flush them).
OpCase qk_norm_instance(const std::string& label, uint64_t seed, const QkNormParams& p, std::span<const float> q,
                        std::span<const float> k) {
  OpCase c = new_case("qk_norm", label, seed);
  set_vars(c, p);
  const int64_t n = p.tokens * p.heads * p.head_dim, dk = p.head_dim;
  std::vector<float> tq(static_cast<size_t>(n)), tk(static_cast<size_t>(n));
  qk_norm_ref<double>(p, q, k, tq, tk);
  c.tensors["q"] = f32_tensor(q);
  c.tensors["k"] = f32_tensor(k);
  c.tensors["q_out"] = output_f32(n);
  c.tensors["k_out"] = output_f32(n);
  const double g = sum_gamma(double(dk)) / 2;
  OutputSpec sq, sk;
  sq.name = "q_out", sk.name = "k_out";
  sq.kind = sk.kind = Kind::Reduction;
  for (int64_t i = 0; i < n; ++i) {
    sq.bound.push_back(std::fabs(double(tq[size_t(i)])) * (g + 19.5 * kU32) + kMinNormal32);
    sk.bound.push_back(std::fabs(double(tk[size_t(i)])) * (g + 14.5 * kU32) + kMinNormal32);
  }
  c.outputs["q_out"] = sq, c.outputs["k_out"] = sk;
  c.truth["q_out"] = widen(tq), c.truth["k_out"] = widen(tk);
  return c;
}

namespace {

OpCase qk_norm_case(const char* label, int64_t tokens, int64_t heads, int64_t dk, uint64_t seed) {
  QkNormParams p;
  p.tokens = tokens, p.heads = heads, p.head_dim = dk, p.eps = 1e-6f;
  Rng rng(seed);
  const int64_t n = tokens * heads * dk;
  std::vector<float> q = rng.fork(1).activations(n), k = rng.fork(2).activations(n);
  for (int64_t r = 0; r < tokens * heads; r += 5)
    for (int64_t i = 0; i < dk; ++i) q[r * dk + i] *= 1e-3f, k[r * dk + i] *= 1e-3f;
  return qk_norm_instance(label, seed, p, q, k);
}

}  // namespace

std::vector<OpCase> qk_norm_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  if (rem)
    for (int64_t dk : {1, 31, 33, 67, 129, 4099})
      out.push_back(qk_norm_case(("remainder dk " + std::to_string(dk)).c_str(), 2, 3, dk, seed + dk));
  // Past the limits engines size for: a head wider than 8192, and more heads (129) than the
  // 64 or 128 a kernel may hold per workgroup or hard-wire; one token (decode).
  if (rem) {
    out.push_back(qk_norm_case("remainder T 1 dk 8257", 1, 2, 8257, seed + 8257));
    out.push_back(qk_norm_case("remainder T 1 heads 129 dk 128", 1, 129, 128, seed + 129 * 128));
  }
  if (real) {
    // Linear attention of both A17B and A3B: Hk = 16, dk = 128.
    out.push_back(qk_norm_case("A17B/A3B decode", 1, 16, 128, seed));
    out.push_back(qk_norm_case("A17B/A3B prefill 64", 64, 16, 128, seed + 1));
  }
  return out;
}

}  // namespace moe::compare
