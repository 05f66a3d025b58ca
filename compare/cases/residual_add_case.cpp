#include <cmath>

#include "compare/cases/case_util.h"
#include "compare/cases/instances.h"
#include "core/rng.h"
#include "ops/residual_add.h"

namespace moe::compare {

// ---- residual_add: one correctly rounded f32 add (Vulkan requires it): bit-exact.
OpCase residual_add_instance(const std::string& label, uint64_t seed, const ResidualAddParams& p,
                             std::span<const float> a, std::span<const float> b) {
  OpCase c = new_case("residual_add", label, seed);
  set_vars(c, p);
  const int64_t n = p.n;
  std::vector<float> y(static_cast<size_t>(n));
  residual_add_ref<double>(p, a, b, y);
  c.tensors["a"] = f32_tensor(a), c.tensors["b"] = f32_tensor(b), c.tensors["y"] = output_f32(n);
  set_exact_output(c, "y", y);
  return c;
}

namespace {

OpCase residual_add_case(const char* label, int64_t n, uint64_t seed) {
  ResidualAddParams p;
  p.n = n;
  Rng rng(seed);
  const std::vector<float> a = rng.fork(1).activations(n), b = rng.fork(2).activations(n);
  return residual_add_instance(label, seed, p, a, b);
}

}  // namespace

std::vector<OpCase> residual_add_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  if (rem)
    for (int64_t n : {1, 31, 255, 257, 4099, 8257, 16411})
      out.push_back(residual_add_case(("remainder n " + std::to_string(n)).c_str(), n, seed + n));
  if (real) {
    out.push_back(residual_add_case("A17B hidden", 4096, seed));
    out.push_back(residual_add_case("A3B decode T 1 hidden", 2048, seed + 2));
    out.push_back(residual_add_case("A3B prefill 64", 64 * 2048, seed + 1));
  }
  return out;
}

}  // namespace moe::compare
