#include "spec/residual_add_spec.h"

#include "core/rng.h"

namespace moe {

ResidualAddInputs residual_add_inputs(const ResidualAddParams& p, uint64_t seed) {
  Rng rng(seed);
  return {rng.fork(1).activations(p.n), rng.fork(2).activations(p.n)};
}

std::vector<SpecShape<ResidualAddParams>> residual_add_shapes(bool remainders, bool real) {
  std::vector<SpecShape<ResidualAddParams>> out;
  if (remainders)
    for (int64_t n : {1, 31, 33, 67, 255, 257, 4099, 8257, 16411})
      out.push_back({"remainder n " + std::to_string(n), ResidualAddParams{n}, uint64_t(n)});
  if (real) {
    out.push_back({"A17B hidden", ResidualAddParams{4096}, 0});
    out.push_back({"A3B decode T 1 hidden", ResidualAddParams{2048}, 2});
    out.push_back({"A3B prefill 64", ResidualAddParams{64 * 2048}, 1});
    out.push_back({"A17B prefill 256 tokens", ResidualAddParams{256 * 4096}, 3});
  }
  return out;
}

}  // namespace moe
