#include "spec/rmsnorm_gated_spec.h"

#include <cmath>

#include "core/rng.h"
#include "spec/norm_bound.h"

namespace moe {

RmsNormGatedInputs rmsnorm_gated_inputs(const RmsNormGatedParams& p, uint64_t seed) {
  Rng rng(seed);
  const int64_t n = p.tokens * p.heads * p.head_dim;
  RmsNormGatedInputs in;
  in.o = rng.fork(1).activations(n);
  shrink_every_fifth_head(in.o, p.tokens * p.heads, p.head_dim);
  in.z = rng.fork(2).activations(n);
  in.w = rng.fork(3).bf16_normal_vec(p.head_dim, 0.2, 1.0);
  return in;
}

std::vector<SpecShape<RmsNormGatedParams>> rmsnorm_gated_shapes(bool remainders, bool real) {
  std::vector<SpecShape<RmsNormGatedParams>> out;
  if (remainders) add_head_norm_remainders(out, "dv");
  if (real) {
    out.push_back({"A17B decode (Hv 64)", RmsNormGatedParams{1, 64, 128, 1e-6f}, 0});
    out.push_back({"A3B decode (Hv 32)", RmsNormGatedParams{1, 32, 128, 1e-6f}, 1});
    out.push_back({"A17B prefill 16", RmsNormGatedParams{16, 64, 128, 1e-6f}, 2});
    out.push_back({"A3B prefill 64", RmsNormGatedParams{64, 32, 128, 1e-6f}, 3});
  }
  return out;
}

std::vector<double> rmsnorm_gated_bound(const RmsNormGatedParams& p, std::span<const float> o,
                                        std::span<const float> z, std::span<const float> w,
                                        std::span<const float> truth, const PrecisionModel& m) {
  const int64_t dv = p.head_dim;
  const double inv_rel = norm_inv_rel(double(dv), m);
  std::vector<double> bound(truth.size());
  for (int64_t r = 0; r < p.tokens * p.heads; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < dv; ++i) ss += double(o[size_t(r * dv + i)]) * double(o[size_t(r * dv + i)]);
    const double inv = 1.0 / std::sqrt(ss / double(dv) + double(p.eps));
    for (int64_t i = 0; i < dv; ++i) {
      const size_t e = size_t(r * dv + i);
      const double t = std::fabs(double(truth[e])), zd = double(z[e]);
      if (z[e] < -87.0f) {
        const double oiw = std::fabs(double(o[e]) * inv * double(w[size_t(i)]));
        bound[e] = t + oiw * std::fabs(zd) * 0x1.0p-125 + kMinNormal32;
      } else {
        bound[e] = t * (inv_rel + m.exp_rel(zd) + m.division_rel + 6 * m.u) + kMinNormal32;
      }
    }
  }
  return bound;
}

}  // namespace moe
