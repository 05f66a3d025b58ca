#include "spec/matmul_q_spec.h"

#include <string>

namespace moe {
namespace {

void gpu_remainders(std::vector<MatmulQShape>& out) {
  auto add = [&](const std::string& label, int64_t T, int64_t rows, int64_t cols, int bits, uint64_t offset,
                 int G = 64) {
    out.push_back({label + " T " + std::to_string(T), MatmulQParams{{rows, cols, bits, G}, T}, offset});
  };
  // Tokens around the kernels' 8-token tiles (1, 2, 7, 16, 64 and a partial tile 67), rows
  // around the rows-per-workgroup (1, 3, 33, 67), cols of 1 to 5 groups (an odd count of words
  // per lane at every subgroup size).
  for (int64_t T : {1, 2, 7, 16, 64})
    for (int64_t rows : {1, 33, 67})
      add("remainder rows " + std::to_string(rows), T, rows, 64 * ((rows + T) % 5 + 1), 4, uint64_t(100 * T + rows));
  // Past the input caches engines size for the shapes they expect (in = 8192 is the VK staging
  // limit): 8192 + one group (129 groups, odd) and 16384 + one group, one token and a partial
  // tile; 8-bit at 8192 + one group, and 8192 + one group of 32.
  add("remainder rows 3 cols 8256", 3, 3, 8256, 4, 7);
  add("remainder rows 3 cols 8256", 1, 3, 8256, 4, 10);
  add("remainder rows 5 cols 16448", 1, 5, 16448, 4, 11);
  add("remainder rows 5 cols 16448", 9, 5, 16448, 4, 12);
  add("remainder 8-bit rows 3 cols 8256", 1, 3, 8256, 8, 13);
  add("remainder 2-bit rows 3 cols 8256", 1, 3, 8256, 2, 14);
  add("remainder G=32 8-bit rows 3 cols 8224", 1, 3, 8224, 8, 15, 32);
  add("remainder partial tile rows 5", 67, 5, 192, 4, 8);
  // Rows past the kernels' rows-per-workgroup thresholds (the bundled R = 2 from 2048 rows, 4
  // from 4096: a last workgroup of 1 or 3 rows), with short and long rows (cols >= 8192: four
  // subgroups per workgroup in the bundled kernels), at every width.
  add("remainder rows 2051 cols 2112", 2, 2051, 2112, 4, 18);
  add("remainder rows 4099 cols 192", 9, 4099, 192, 4, 19);
  add("remainder rows 8195 cols 128", 3, 8195, 128, 4, 21);
  add("remainder rows 2051 cols 8256", 3, 2051, 8256, 4, 22);
  // Many (row, token) pairs per workgroup with several subgroups (rows >= 2048, cols >= 8192):
  // the bundled kernels combine their partials through shared memory in rounds of 8 pairs.
  add("remainder rows 4099 cols 8256", 9, 4099, 8256, 4, 28);
  add("remainder 8-bit rows 4099 cols 8256", 5, 4099, 8256, 8, 29);
  add("remainder 2-bit rows 4099 cols 8256", 5, 4099, 8256, 2, 30);
  add("remainder 2-bit rows 5 cols 8256", 9, 5, 8256, 2, 31);  // a partial token tile there
  add("remainder 8-bit rows 4099 cols 192", 5, 4099, 192, 8, 26);
  add("remainder 2-bit rows 4099 cols 192", 5, 4099, 192, 2, 27);
  for (int64_t T : {1, 7, 64})
    for (int64_t rows : {3, 67})
      add("remainder 8-bit rows " + std::to_string(rows), T, rows, 64 * ((rows + T) % 5 + 1), 8,
          uint64_t(1000 + 100 * T + rows));
  // Other group sizes and 2 bits: for engines' kernels; the bundled ones skip what their limits exclude.
  for (int bits : {8, 4, 2}) {
    const std::string b = std::string(" ").append(std::to_string(bits)).append("-bit");
    add("remainder G=32" + b, 7, 33, 96, bits, 2000 + uint64_t(bits), 32);
    add("remainder G=128" + b, 7, 33, 384, bits, 3000 + uint64_t(bits), 128);
  }
  add("remainder 2-bit rows 33", 16, 33, 192, 2, 9);
  // A partial last tile at 2 and 8 bits too (19 = 2 full 8-token tiles + 3): a kernel that
  // sizes the last tile wrongly reads X and writes Y past their ends only here.
  add("remainder 2-bit partial tile rows 5", 19, 5, 192, 2, 16);
  add("remainder 8-bit partial tile rows 5", 19, 5, 192, 8, 17);
  // Per token its own one-hot column; T = 9: a full 8-token tile and a partial one.
  for (int bits : {2, 4, 8})
    out.push_back({"remainder exact " + std::to_string(bits) + "-bit rows 5 T 9",
                   MatmulQParams{{5, kExactCols, bits, 64}, 9}, 4000 + uint64_t(bits), QuantDotVariant{.exact = true}});
}

void gpu_real(std::vector<MatmulQShape>& out) {
  // Every projection of both models at decode (T = 1), and prefill chunks (T = 16) of the A17B
  // k/v and the A3B expert and router shapes. lm_head is left out (248320 rows, beyond
  // lavapipe's 128 MiB buffers); the expert shapes at T = 16 beyond A3B's are covered by
  // swiglu_expert (A17B down [4096, 1024] at T = 16 through this kernel).
  uint64_t k = 100;
  for (const Projection& pr : real_projections())
    out.push_back({decode_label(pr), MatmulQParams{{pr.rows, pr.cols, pr.bits, 64}, 1}, ++k});
  auto add = [&](const std::string& label, int64_t T, int64_t rows, int64_t cols, int bits, uint64_t offset) {
    out.push_back({label + " T " + std::to_string(T), MatmulQParams{{rows, cols, bits, 64}, T}, offset});
  };
  add("A17B k/v_proj", 16, 512, 4096, 4, 20);
  add("A3B expert gate/up", 16, 512, 2048, 4, 23);
  add("A3B expert down", 16, 2048, 512, 4, 24);
  add("A3B router mlp.gate 8-bit", 16, 256, 2048, 8, 25);
}

void cpu_shapes(std::vector<MatmulQShape>& out, bool remainders, bool real) {
  auto add = [&](std::string label, MatmulQParams p, uint64_t offset, int64_t window) {
    out.push_back({std::move(label), p, offset, QuantDotVariant{.window = window, .gpu = false}});
  };
  uint64_t k = 0;
  if (remainders) {
    // Tokens 2, 7, 64; rows around 1 and odd counts; one group, two, 4096 + one group.
    for (int bits : {2, 4, 8})
      for (int64_t tokens : {2, 7, 64})
        for (int64_t cols : {64, 128, 4096 + 64})
          for (int64_t rows : {1, 31, 67}) {
            if (tokens == 64 && cols > 128) continue;  // the real shapes below cover T = 64 x 4096
            add("remainder T=" + std::to_string(tokens) + " " + std::to_string(rows) + "x" + std::to_string(cols) +
                    " " + std::to_string(bits) + "-bit",
                {{rows, cols, bits, 64}, tokens}, ++k, 64);
          }
    add("remainder G=32", {{33, 96, 4, 32}, 7}, ++k, 64);
    add("remainder G=128", {{33, 384, 4, 128}, 7}, ++k, 64);
  }
  if (!real) return;
  // docs/ops/verification.md "Shapes to cover" (docs/ops/formats.md "Tensor catalog") with prefill
  // token counts; large ones on row windows.
  add("A17B linear in_proj_qkv, T=64", {{12288, 4096, 4, 64}, 64}, 1001, 8);
  add("A17B o_proj/out_proj, T=7", {{4096, 8192, 4, 64}, 7}, 1002, 16);
  add("A17B expert gate/up, T=7", {{1024, 4096, 4, 64}, 7}, 1003, 16);
  add("A17B expert down 2-bit, T=2", {{4096, 1024, 2, 64}, 2}, 1004, 32);
  add("A3B linear in_proj_qkv, T=64", {{8192, 2048, 4, 64}, 64}, 1005, 8);
  add("A3B router mlp.gate 8-bit, T=64", {{256, 2048, 8, 64}, 64}, 1006, 8);
  add("A3B expert gate/up, T=7", {{512, 2048, 4, 64}, 7}, 1007, 16);
  add("A3B lm_head rows 0..8191 of 248320, T=2", {{8192, 2048, 4, 64}, 2}, 1008, 32);
}

}  // namespace

std::vector<MatmulQShape> matmul_q_shapes(bool remainders, bool real) {
  std::vector<MatmulQShape> out;
  if (remainders) gpu_remainders(out);
  if (real) gpu_real(out);
  cpu_shapes(out, remainders, real);
  return out;
}

}  // namespace moe
