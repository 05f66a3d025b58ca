#include <cmath>

#include "compare/cases/bound_mode.h"
#include "compare/cases/case_util.h"
#include "compare/cases/instances.h"
#include "core/rng.h"
#include "ops/rmsnorm_gated.h"

namespace moe::compare {

// ---- rmsnorm_gated: o the recurrence output (activations, every 5th head shrunk by 1e-3 so
// that eps takes part), z the gate projection (activations: N(0,1) with x20 outliers, so silu
// sees both tails and, now and then, z < -87), w the checkpoint's bf16 weight around 1.
//
// Bound in f32 accumulation, any summation order, relative to |y_true|, first order in
// u = 2^-24; one ULP of a value is at most 2u of it (Vulkan precision rules, as relied on):
//   inv = inversesqrt(ss / dv + eps): gamma_dv / 2 + 7.5u (ss: gamma_dv, halved; / dv 2.5 ULP
//     or * (1/dv): 6u, halved; + eps: u, halved; inversesqrt 2 ULP: 4u).
//   silu(z) = z * sigmoid(z): exp(+-z) 3 + 2|z| ULP = (6 + 4|z|)u; it enters 1 + e with weight
//     e/(1+e) <= 1 (and e/(1+e) in the z < 0 form enters at 1/(1+e) <= 1); the sum u; the
//     division 2.5 ULP (denominator in [1, 2] in the overflow-free form, or <= 2^126 in the
//     engines' z / (1 + exp(-z)) for z >= -87): 5u; a reciprocal-then-product form: +u.
//     Where e underflows (|z| > 87.3) and is flushed, the absolute error on sigmoid ~ 1 is
//     < 2^-126: below u. silu: (13 + 4|z|)u.
//   ((o * inv) * w) * silu, any association: 3u. The truth's own rounding to f32: u.
//   Total: gamma_dv/2 + (24.5 + 4|z|)u, times |y_true|, plus the smallest normal for results
//   in the subnormal range (a device may flush them).
// For z < -87 (e^z < 2^-125.5) silu is below 2^-126 |z|: a kernel may give -0 (the engines'
// z / (1 + inf), a flushed exp) or a subnormal-derived value of at most |z| 2^-126 (1 + 2^-20),
// so there the bound is |y_true| + |o inv w| |z| 2^-125 + the smallest normal (|o inv w| from
// the truth: the result's magnitude is bounded, not its relative error).
OpCase rmsnorm_gated_instance(const std::string& label, uint64_t seed, const RmsNormGatedParams& p,
                              std::span<const float> o, std::span<const float> z, std::span<const bf16> wb) {
  OpCase c = new_case("rmsnorm_gated", label, seed);
  set_vars(c, p);
  const int64_t n = p.tokens * p.heads * p.head_dim, dv = p.head_dim, tokens = p.tokens, heads = p.heads;
  std::vector<float> w(wb.size()), y(static_cast<size_t>(n));
  for (size_t i = 0; i < wb.size(); ++i) w[i] = bf16_to_f32(wb[i]);
  rmsnorm_gated_ref<double>(p, o, z, w, y);
  c.tensors["o"] = f32_tensor(o);
  c.tensors["z"] = f32_tensor(z);
  c.tensors["w"] = bf16_tensor(wb);
  c.tensors["y"] = output_f32(n);
  OutputSpec s;
  s.name = "y", s.kind = Kind::Reduction;
  const double g = sum_gamma(double(dv)) / 2;
  for (int64_t r = 0; r < tokens * heads; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < dv; ++i) ss += double(o[r * dv + i]) * double(o[r * dv + i]);
    const double inv = 1.0 / std::sqrt(ss / double(dv) + double(p.eps));
    for (int64_t i = 0; i < dv; ++i) {
      const size_t e = size_t(r * dv + i);
      const double t = std::fabs(double(y[e])), az = std::fabs(double(z[e]));
      if (z[e] < -87.0f) {
        const double oiw = std::fabs(double(o[e]) * inv * double(w[size_t(i)]));
        s.bound.push_back(t + oiw * az * 0x1.0p-125 + kMinNormal32);
      } else {
        s.bound.push_back(t * (g + (24.5 + 4 * az) * kU32) + kMinNormal32);
      }
    }
  }
  c.outputs["y"] = s;
  c.truth["y"] = widen(y);
  return c;
}

namespace {

OpCase rmsnorm_gated_case(const char* label, int64_t tokens, int64_t heads, int64_t dv, uint64_t seed) {
  RmsNormGatedParams p;
  p.tokens = tokens, p.heads = heads, p.head_dim = dv, p.eps = 1e-6f;
  Rng rng(seed);
  const int64_t n = tokens * heads * dv;
  std::vector<float> o = rng.fork(1).activations(n);
  for (int64_t r = 0; r < tokens * heads; r += 5)
    for (int64_t i = 0; i < dv; ++i) o[r * dv + i] *= 1e-3f;
  const std::vector<float> z = rng.fork(2).activations(n);
  const std::vector<bf16> wb = rng.fork(3).bf16_normal_vec(dv, 0.2, 1.0);
  return rmsnorm_gated_instance(label, seed, p, o, z, wb);
}

}  // namespace

std::vector<OpCase> rmsnorm_gated_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  if (rem)
    for (int64_t dv : {1, 31, 33, 67, 129, 4099})
      out.push_back(rmsnorm_gated_case(("remainder dv " + std::to_string(dv)).c_str(), 2, 3, dv, seed + dv));
  // Past the limits engines size for: a head wider than 8192, and more v heads (129) than the
  // 64 or 128 a kernel may hold or hard-wire; one token (decode).
  if (rem) {
    out.push_back(rmsnorm_gated_case("remainder T 1 dv 8257", 1, 2, 8257, seed + 8257));
    out.push_back(rmsnorm_gated_case("remainder T 1 heads 129 dv 128", 1, 129, 128, seed + 129 * 128));
  }
  if (real) {
    out.push_back(rmsnorm_gated_case("A17B decode (Hv 64)", 1, 64, 128, seed));
    out.push_back(rmsnorm_gated_case("A3B decode (Hv 32)", 1, 32, 128, seed + 1));
    out.push_back(rmsnorm_gated_case("A17B prefill 16", 16, 64, 128, seed + 2));
    out.push_back(rmsnorm_gated_case("A3B prefill 64", 64, 32, 128, seed + 3));
  }
  return out;
}

}  // namespace moe::compare
