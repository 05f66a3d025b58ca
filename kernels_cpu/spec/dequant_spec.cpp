#include "spec/dequant_spec.h"

#include <string>

#include "core/test_data.h"

namespace moe {

QuantStorage dequant_inputs(const DequantParams& p, uint64_t seed) {
  return random_quant(Rng(seed).fork(1), p.rows, p.cols, p.bits, p.group_size);
}

std::vector<DequantShape> dequant_shapes(bool remainders, bool real) {
  std::vector<DequantShape> out;
  auto add = [&](std::string label, int64_t rows, int64_t cols, int bits, int G, uint64_t offset, bool gpu = true) {
    out.push_back({std::move(label), DequantParams{rows, cols, bits, G}, offset, DequantVariant{gpu}});
  };
  uint64_t k = 0;
  if (remainders) {
    for (int bits : {2, 4, 8})
      for (int64_t rows : {1, 33})
        for (int64_t cols : {64, 4096 + 64})
          add("remainder " + std::to_string(bits) + "-bit " + std::to_string(rows) + "x" + std::to_string(cols), rows,
              cols, bits, 64, ++k);
    for (int bits : {2, 4, 8})
      for (int G : {32, 128})
        add("remainder G=" + std::to_string(G) + " " + std::to_string(bits) + "-bit", 33, 4 * 128, bits, G, ++k);
    for (int64_t cols : {8192 + 64, 16384 + 64}) add("remainder 4-bit 1x" + std::to_string(cols), 1, cols, 4, 64, ++k);
  }
  if (real) {
    add("A17B embedding row", 1, 4096, 4, 64, 0);
    add("A17B expert gate 2-bit", 1024, 4096, 2, 64, 1);
    add("A3B expert gate/up", 512, 2048, 4, 64, 2);
    add("A3B mlp.gate 8-bit", 256, 2048, 8, 64, 3);
    add("A3B shared_expert_gate 8-bit", 1, 2048, 8, 64, 4);
    // The same tensors at the other model's shape: a token's embedding row (decode), the
    // experts at the other bit width, the 4-bit A17B gate.
    add("A3B decode T 1 embedding row", 1, 2048, 4, 64, 5);
    add("A17B expert gate/up 4-bit", 1024, 4096, 4, 64, 6);
    add("A3B expert gate/up 2-bit", 512, 2048, 2, 64, 7);
    add("A17B shared_expert_gate 4-bit", 1, 4096, 4, 64, 8);
  }
  k = 0;
  if (remainders) {
    for (int bits : {2, 4, 8})
      for (int64_t rows : {1, 31, 33, 67})
        for (int64_t cols : {64, 192, 4160})
          add("remainder " + std::to_string(rows) + "x" + std::to_string(cols), rows, cols, bits, 64, ++k, false);
    for (int G : {32, 128}) add("remainder group " + std::to_string(G), 33, 1024, 4, G, ++k, false);
  }
  if (real) {
    add("A17B expert gate/up", 1024, 4096, 4, 64, 1, false);
    add("A17B expert down", 4096, 1024, 4, 64, 2, false);
    add("A3B embedding row", 1, 2048, 4, 64, 4, false);
  }
  return out;
}

}  // namespace moe
