#include <string>

#include "compare/cases/case_util.h"
#include "core/rng.h"
#include "core/test_data.h"
#include "ops/dequant.h"

namespace moe::compare {
namespace {

// ---- dequant: each output is one dequantised weight q*s + b. q*s is exact in f32 (an integer
// < 2^8 times an 8-bit bf16 significand), so fused or not the GPU rounds the exact sum once
// (Vulkan: +, * and fma are correctly rounded), as the truth's f64 sum rounded to f32 does
// (53 >= 2*24 + 2): Kind::Exact, the identical float.
OpCase dequant_case(const std::string& label, int64_t rows, int64_t cols, int bits, int group_size, uint64_t seed) {
  DequantParams p;
  p.rows = rows, p.cols = cols, p.bits = bits, p.group_size = group_size;
  OpCase c = new_case("dequant", label, seed);
  set_vars(c, p);
  Rng rng(seed);
  const QuantStorage W = random_quant(rng.fork(1), rows, cols, bits, group_size);
  std::vector<float> y(static_cast<size_t>(rows * cols));
  dequant_ref<double>(p, W.view(), y);
  add_quant_tensors(c, "W", W);
  c.tensors["y"] = output_f32(rows * cols);
  set_exact_output(c, "y", y);
  return c;
}

}  // namespace

std::vector<OpCase> dequant_cases(bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  if (rem) {
    // One group, and a 4096-wide row plus one group; 1 row and 33 (odd: scale pairs straddle
    // rows); every bit width; group sizes 32 and 128.
    uint64_t k = 0;
    for (int bits : {2, 4, 8})
      for (int64_t rows : {1, 33})
        for (int64_t cols : {64, 4096 + 64})
          out.push_back(dequant_case("remainder " + std::to_string(bits) + "-bit " + std::to_string(rows) + "x" +
                                         std::to_string(cols),
                                     rows, cols, bits, 64, seed + ++k));
    for (int bits : {2, 4, 8})
      for (int gs : {32, 128})
        out.push_back(dequant_case("remainder G=" + std::to_string(gs) + " " + std::to_string(bits) + "-bit", 33, 4 * 128,
                                   bits, gs, seed + ++k));
    // One row past 8192 and 16384 columns (the widths engines size shared buffers for).
    for (int64_t cols : {8192 + 64, 16384 + 64})
      out.push_back(dequant_case("remainder 4-bit 1x" + std::to_string(cols), 1, cols, 4, 64, seed + ++k));
  }
  if (real) {
    out.push_back(dequant_case("A17B embedding row", 1, 4096, 4, 64, seed));
    out.push_back(dequant_case("A17B expert gate 2-bit", 1024, 4096, 2, 64, seed + 1));
    out.push_back(dequant_case("A3B expert gate/up", 512, 2048, 4, 64, seed + 2));
    out.push_back(dequant_case("A3B mlp.gate 8-bit", 256, 2048, 8, 64, seed + 3));
    out.push_back(dequant_case("A3B shared_expert_gate 8-bit", 1, 2048, 8, 64, seed + 4));
    // The same tensors at the other model's shape: a token's embedding row (decode), the
    // experts at the other bit width, the 4-bit A17B gate.
    out.push_back(dequant_case("A3B decode T 1 embedding row", 1, 2048, 4, 64, seed + 5));
    out.push_back(dequant_case("A17B expert gate/up 4-bit", 1024, 4096, 4, 64, seed + 6));
    out.push_back(dequant_case("A3B expert gate/up 2-bit", 512, 2048, 2, 64, seed + 7));
    out.push_back(dequant_case("A17B shared_expert_gate 4-bit", 1, 4096, 4, 64, seed + 8));
  }
  return out;
}

}  // namespace moe::compare
