#include <cmath>

#include "compare/cases/bound_mode.h"
#include "compare/cases/case_util.h"
#include "compare/cases/instances.h"
#include "core/rng.h"
#include "ops/rmsnorm.h"

namespace moe::compare {

OpCase rmsnorm_instance(const std::string& label, uint64_t seed, const RmsNormParams& p, std::span<const float> x,
                        std::span<const bf16> wb) {
  OpCase c = new_case("rmsnorm", label, seed);
  set_vars(c, p);
  std::vector<float> w(wb.size()), y(x.size());
  for (size_t i = 0; i < wb.size(); ++i) w[i] = bf16_to_f32(wb[i]);
  rmsnorm_ref<double>(p, x, w, y);
  c.tensors["x"] = f32_tensor(x);
  c.tensors["w"] = bf16_tensor(wb);
  c.tensors["y"] = output_f32(p.rows * p.dim);
  // Bound in f32 accumulation, any order: sum of squares gamma_dim (halved by the square root);
  // the division by dim (Vulkan: 2.5 ULP), + eps (correctly rounded), inversesqrt (2 ULP), 1 + w,
  // x * inv, * w (1 each) and the truth's own rounding: 9.5u -> 12u with slack for the ULP
  // budgets counted as u each; plus the smallest normal for subnormal results.
  OutputSpec s;
  s.name = "y", s.kind = Kind::Reduction;
  const double rel = sum_gamma(double(p.dim)) / 2 + 12 * kU32;
  for (float v : y) s.bound.push_back(std::fabs(double(v)) * rel + kMinNormal32);
  c.outputs["y"] = s;
  c.truth["y"] = widen(y);
  return c;
}

namespace {

// ---- rmsnorm: weights are stored bf16 in checkpoints, so the case draws bf16 weights.
OpCase rmsnorm_case(const char* label, int64_t rows, int64_t dim, bool add_one, uint64_t seed) {
  RmsNormParams p;
  p.rows = rows, p.dim = dim, p.eps = 1e-6f, p.add_one = add_one;
  Rng rng(seed);
  const std::vector<float> x = rng.fork(1).activations(rows * dim);
  const std::vector<bf16> wb = rng.fork(2).bf16_normal_vec(dim, 0.2, add_one ? 0.0 : 1.0);
  return rmsnorm_instance(label, seed, p, x, wb);
}

}  // namespace

std::vector<OpCase> rmsnorm_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  if (rem)
    for (int64_t dim : {1, 31, 33, 67, 4099})
      out.push_back(rmsnorm_case(("remainder dim " + std::to_string(dim)).c_str(), 3, dim, dim % 2 == 1, seed + dim));
  // The same tails with the weights as engines store them (1 + w folded in: add_one = 0), so a
  // kernel that implements only that form meets the tails too.
  if (rem)
    for (int64_t dim : {1, 33, 4099})
      out.push_back(rmsnorm_case(("remainder dim " + std::to_string(dim) + " w").c_str(), 3, dim, false, seed + 7 * dim));
  // More rows than one grid dimension of 512 workgroups (ggml splits rows over x, y and z as
  // row = z 262144 + y 512 + x): rows 512.. and 1024.. exist only here. Short rows keep it cheap.
  if (rem) out.push_back(rmsnorm_case("remainder rows 1535 dim 33 w", 1535, 33, false, seed + 1535));
  // Past the 4096- and 8192-wide rows engines cache in shared memory: one row (decode) each.
  if (rem)
    for (int64_t dim : {8257, 16411})
      out.push_back(rmsnorm_case(("remainder T 1 dim " + std::to_string(dim)).c_str(), 1, dim, dim % 4 == 1, seed + dim));
  if (real) {
    out.push_back(rmsnorm_case("A17B hidden", 1, 4096, false, seed));
    out.push_back(rmsnorm_case("A17B q heads", 32, 256, false, seed + 1));
    out.push_back(rmsnorm_case("A3B hidden", 1, 2048, false, seed + 2));
    out.push_back(rmsnorm_case("A3B prefill 16", 16, 2048, false, seed + 3));
    out.push_back(rmsnorm_case("HF checkpoint (1+w)", 2, 2048, true, seed + 4));
    // Decode (T = 1) at every per-head norm of both models: q_norm rows = q heads, k_norm rows = kv heads.
    out.push_back(rmsnorm_case("A3B decode T 1 q_norm (16 heads)", 16, 256, false, seed + 5));
    out.push_back(rmsnorm_case("A17B/A3B decode T 1 k_norm (2 kv heads)", 2, 256, false, seed + 6));
  }
  return out;
}

}  // namespace moe::compare
