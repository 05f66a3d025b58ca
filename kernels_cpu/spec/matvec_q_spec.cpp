#include "spec/matvec_q_spec.h"

#include <string>

namespace moe {
namespace {

// A CPU check shape: the GPU cases cover these under their own labels.
constexpr QuantDotVariant kCpuOnly{.gpu = false};

void gpu_remainders(std::vector<MatvecQShape>& out) {
  auto add = [&](std::string label, int64_t rows, int64_t cols, int bits, uint64_t offset, int G = 64) {
    out.push_back({std::move(label), MatvecQParams{rows, cols, bits, G}, offset});
  };
  for (int bits : {2, 4, 8})
    out.push_back({"remainder exact " + std::to_string(bits) + "-bit rows 5", MatvecQParams{5, kExactCols, bits, 64},
                   4000 + uint64_t(bits), QuantDotVariant{.exact = true}});
  // 8-bit (matvec_q8: the A3B router mlp.gate and shared_expert_gate) and 2-bit (matvec_q2: the
  // requantised routed experts); a kernel limited to G = 64 skips the other group sizes.
  for (int bits : {8, 2})
    for (int64_t rows : {1, 3, 31, 33, 67})
      add("remainder " + std::to_string(bits) + "-bit rows " + std::to_string(rows), rows, 64 * (rows % 5 + 1), bits,
          100 * uint64_t(bits) + uint64_t(rows));
  for (int bits : {8, 4, 2}) {
    const std::string b = std::string(" ").append(std::to_string(bits)).append("-bit");
    add("remainder G=32" + b, 33, 96, bits, 1000 + uint64_t(bits), 32);
    add("remainder G=128" + b, 33, 384, bits, 2000 + uint64_t(bits), 128);
  }
  // Groups wider than any checkpoint's (the contract allows any multiple of 32/bits dividing
  // cols): G = 256, three groups, 3 rows. Words per group computed with a wrong divisor
  // (group_size / 15 at 2 bits) agree with the right one up to G = 224 and differ from here on.
  for (int bits : {8, 2})
    add("remainder G=256 " + std::to_string(bits) + "-bit", 3, 768, bits, 2500 + uint64_t(bits), 256);
  // Past the shared-memory input caches engines size for the shapes they expect
  // (docs/ops/verification.md "Shapes to cover": in = 8192 is the VK staging limit): 8192 + one
  // group (an odd group count), 16384 + one group, and at G = 32 8192 + one group of 32 (257
  // groups). Few rows, so cheap.
  for (int bits : {4, 8, 2}) {
    const std::string b = std::string(" ").append(std::to_string(bits)).append("-bit");
    add("remainder rows 3 cols 8256" + b, 3, 8256, bits, 3000 + uint64_t(bits));
    add("remainder rows 5 cols 16448" + b, 5, 16448, bits, 3100 + uint64_t(bits));
    add("remainder G=32 rows 3 cols 8224" + b, 3, 8224, bits, 3200 + uint64_t(bits), 32);
  }
  // Row counts at which the bundled kernels take 2, 4 and 8 rows per workgroup (R =
  // min(8, rows / 1024)), each leaving a partial last workgroup (rows % R = 1, 3, 3); cols of 33,
  // 3 and 2 groups (264 words: a whole step of 256 words per workgroup and a partial one).
  for (int bits : {4, 8, 2}) {
    const std::string b = std::string(" ").append(std::to_string(bits)).append("-bit");
    add("remainder rows 2051 cols 2112" + b, 2051, 2112, bits, 3300 + uint64_t(bits));
    add("remainder rows 4099 cols 192" + b, 4099, 192, bits, 3400 + uint64_t(bits));
    add("remainder rows 8195 cols 128" + b, 8195, 128, bits, 3500 + uint64_t(bits));
  }
}

void cpu_shapes(std::vector<MatvecQShape>& out, bool remainders, bool real) {
  uint64_t k = 0;
  if (remainders) {
    // Columns: one group, two groups, a 4096-wide row plus one group; rows around the fast
    // tier's 4-row blocks. Every bit width; group sizes 32 (portable path) and 128 as well.
    for (int bits : {2, 4, 8})
      for (int64_t cols : {64, 128, 4096 + 64})
        for (int64_t rows : {1, 31, 33, 67})
          out.push_back(
              {"remainder " + std::to_string(rows) + "x" + std::to_string(cols) + " " + std::to_string(bits) + "-bit",
               MatvecQParams{rows, cols, bits, 64}, ++k, kCpuOnly});
    for (int bits : {2, 4, 8}) {
      out.push_back({"remainder G=32", MatvecQParams{33, 96, bits, 32}, ++k, kCpuOnly});
      out.push_back({"remainder G=128", MatvecQParams{33, 384, bits, 128}, ++k, kCpuOnly});
    }
  }
  if (!real) return;
  // docs/ops/verification.md "Shapes to cover" (docs/ops/formats.md "Tensor catalog"; out x in).
  // lm_head is [248320, d]: a block of 8192 rows.
  const struct {
    const char* label;
    int64_t rows, cols;
    int bits;
  } shapes[] = {
      {"A17B full q_proj", 16384, 4096, 4},
      {"A17B full k_proj/v_proj", 512, 4096, 4},
      {"A17B o_proj/out_proj", 4096, 8192, 4},
      {"A17B linear in_proj_qkv", 12288, 4096, 4},
      {"A17B linear in_proj_z", 8192, 4096, 4},
      {"A17B linear in_proj_a/b", 64, 4096, 4},
      {"A17B router mlp.gate", 512, 4096, 4},
      {"A17B shared gate/up, expert gate/up", 1024, 4096, 4},
      {"A17B shared down, expert down", 4096, 1024, 4},
      {"A17B expert gate/up 2-bit", 1024, 4096, 2},
      {"A17B expert down 2-bit", 4096, 1024, 2},
      {"A17B shared_expert_gate", 1, 4096, 4},
      {"A17B lm_head rows 0..8191 of 248320", 8192, 4096, 4},
      {"A3B linear in_proj_qkv / full q_proj", 8192, 2048, 4},
      {"A3B full k_proj/v_proj", 512, 2048, 4},
      {"A3B o_proj/out_proj", 2048, 4096, 4},
      {"A3B linear in_proj_z", 4096, 2048, 4},
      {"A3B linear in_proj_a/b", 32, 2048, 4},
      {"A3B router mlp.gate 8-bit", 256, 2048, 8},
      {"A3B shared/expert gate/up", 512, 2048, 4},
      {"A3B shared/expert down", 2048, 512, 4},
      {"A3B shared_expert_gate 8-bit", 1, 2048, 8},
      {"A3B lm_head rows 0..8191 of 248320", 8192, 2048, 4},
  };
  k = 1000;
  for (const auto& s : shapes) out.push_back({s.label, MatvecQParams{s.rows, s.cols, s.bits, 64}, ++k, kCpuOnly});
}

}  // namespace

std::vector<MatvecQShape> matvec_q_shapes(bool remainders, bool real) {
  std::vector<MatvecQShape> out;
  if (remainders)
    for (int64_t rows : {1, 3, 31, 33, 67})
      out.push_back(
          {"remainder rows " + std::to_string(rows), MatvecQParams{rows, 64 * (rows % 5 + 1), 4, 64}, uint64_t(rows)});
  if (real) {
    // A matvec is one decode token.
    uint64_t k = 100;
    for (const Projection& pr : real_projections())
      out.push_back({decode_label(pr), MatvecQParams{pr.rows, pr.cols, pr.bits, 64}, ++k});
    // The 4-bit kernel at a single A3B-wide row (the checkpoint's gate is 8-bit, above).
    out.push_back({"A3B shared_expert_gate", MatvecQParams{1, 2048, 4, 64}, 4});
  }
  if (remainders) gpu_remainders(out);
  cpu_shapes(out, remainders, real);
  return out;
}

}  // namespace moe
