#include "spec/rmsnorm_spec.h"

#include "core/rng.h"
#include "spec/norm_bound.h"

namespace moe {

RmsNormInputs rmsnorm_inputs(const RmsNormParams& p, uint64_t seed, float x_scale) {
  Rng rng(seed);
  RmsNormInputs in;
  in.x = rng.fork(1).activations(p.rows * p.dim);
  for (float& v : in.x) v *= x_scale;
  in.w = rng.fork(2).bf16_normal_vec(p.dim, 0.2, p.add_one ? 0.0 : 1.0);
  return in;
}

std::vector<SpecShape<RmsNormParams, float>> rmsnorm_shapes(bool remainders, bool real) {
  std::vector<SpecShape<RmsNormParams, float>> out;
  auto add = [&](std::string label, int64_t rows, int64_t dim, bool add_one, uint64_t offset, float x_scale = 1.0f) {
    out.push_back({std::move(label), RmsNormParams{rows, dim, 1e-6f, add_one}, offset, x_scale});
  };
  if (remainders) {
    for (int64_t dim : {1, 31, 33, 67, 4099}) add("remainder dim " + std::to_string(dim), 3, dim, dim % 2 == 1, dim);
    // The same tails with the weights as engines store them (1 + w folded in: add_one = 0).
    for (int64_t dim : {1, 31, 33, 67, 4099}) add("remainder dim " + std::to_string(dim) + " w", 3, dim, false, 7 * dim);
    // ggml splits rows over x, y and z as row = z 262144 + y 512 + x: rows 512.. and 1024..
    add("remainder rows 1535 dim 33 w", 1535, 33, false, 1535);
    for (int64_t dim : {8257, 16411}) add("remainder T 1 dim " + std::to_string(dim), 1, dim, dim % 4 == 1, dim);
    // Row lengths in each step of an unrolled block ladder (ggml instantiates its row loop for
    // 1, 2, 3, 4, 8, 10, 12, 16, 32 and n blocks of 512): 2, 3, 5, 11, 13, 17 and 34 blocks.
    for (int64_t dim : {1000, 1500, 2100, 5500, 6500, 8300, 16900})
      add("remainder T 1 dim " + std::to_string(dim) + " w", 1, dim, false, 3 * dim);
    // And the top of a step (4, 8, 10, 12, 16 and 32 blocks): a step that runs one block fewer
    // than it should misses the row's last block only here.
    for (int64_t dim : {2000, 3900, 5000, 6100, 8000, 16300})
      add("remainder T 1 dim " + std::to_string(dim) + " w", 1, dim, false, 3 * dim);
  }
  if (remainders) add("remainder T 1 dim 4096 eps-dominated (x * 1e-3)", 1, 4096, false, 4096, 1e-3f);
  if (real) {
    add("A17B hidden", 1, 4096, false, 0);
    add("A17B q heads", 32, 256, false, 1);
    add("A3B hidden", 1, 2048, false, 2);
    add("A3B prefill 16", 16, 2048, false, 3);
    add("HF checkpoint (1+w)", 2, 2048, true, 4);
    // Decode (T = 1) at every per-head norm of both models: q_norm rows = q heads, k_norm rows = kv heads.
    add("A3B decode T 1 q_norm (16 heads)", 16, 256, false, 5);
    add("A17B/A3B decode T 1 k_norm (2 kv heads)", 2, 256, false, 6);
    add("A3B prefill 64 tokens", 64, 2048, false, 7);
  }
  return out;
}

std::vector<double> rmsnorm_bound(const RmsNormParams& p, std::span<const float> truth, const PrecisionModel& m) {
  return relative_bound(truth, norm_inv_rel(double(p.dim), m) + 4 * m.u);
}

}  // namespace moe
