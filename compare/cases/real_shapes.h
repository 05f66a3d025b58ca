// The quantized projections of Qwen3.5-397B-A17B and Qwen3.6-35B-A3B at their real shapes
// (docs/ops/models.md "Shape constants", docs/ops/formats.md "Tensor catalog",
// docs/ops/verification.md "Shapes to cover"; out x in), one entry per distinct (rows, cols, bits)
// of each model. The matvec and matmul cases run every entry at T = 1 (decode): an engine's decode
// kernel hard-wired to one model's widths (cols 4096, or its row count) meets the other
// model's here. Left out: lm_head [248320, d] (0.25-0.5 GB at 4 bits, beyond lavapipe's
// 128 MiB storage buffers); embedding_case.cpp covers the real vocabulary's addressing.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace moe::compare {

struct Projection {
  const char* model;  // "A17B" or "A3B"
  const char* name;   // the checkpoint tensors with this shape
  int64_t rows, cols;
  int bits;
};

inline const std::vector<Projection>& real_projections() {
  static const std::vector<Projection> list = {
      // A17B: d 4096, 32 q / 2 kv heads of 256, 64 v / 16 k linear heads of 128, 512 experts, I 1024.
      {"A17B", "q_proj (+gate)", 16384, 4096, 4},
      {"A17B", "k/v_proj, router mlp.gate", 512, 4096, 4},
      {"A17B", "o_proj, linear out_proj", 4096, 8192, 4},
      {"A17B", "linear in_proj_qkv", 12288, 4096, 4},
      {"A17B", "linear in_proj_z", 8192, 4096, 4},
      {"A17B", "linear in_proj_a/b", 64, 4096, 4},
      {"A17B", "shared_expert_gate", 1, 4096, 4},
      {"A17B", "expert gate/up", 1024, 4096, 4},
      {"A17B", "expert down", 4096, 1024, 4},
      {"A17B", "expert gate/up (requantised)", 1024, 4096, 2},
      {"A17B", "expert down (requantised)", 4096, 1024, 2},
      // A3B: d 2048, 16 q / 2 kv heads of 256, 32 v / 16 k linear heads of 128, 256 experts, I 512.
      {"A3B", "q_proj (+gate), linear in_proj_qkv", 8192, 2048, 4},
      {"A3B", "k/v_proj, expert gate/up", 512, 2048, 4},
      {"A3B", "o_proj, linear out_proj", 2048, 4096, 4},
      {"A3B", "linear in_proj_z", 4096, 2048, 4},
      {"A3B", "linear in_proj_a/b", 32, 2048, 4},
      {"A3B", "router mlp.gate", 256, 2048, 8},
      {"A3B", "shared_expert_gate", 1, 2048, 8},
      {"A3B", "expert down", 2048, 512, 4},
      {"A3B", "expert gate/up (requantised)", 512, 2048, 2},
      {"A3B", "expert down (requantised)", 2048, 512, 2},
  };
  return list;
}

// "A3B decode T 1 router mlp.gate 256x2048 8-bit"
inline std::string decode_label(const Projection& pr) {
  return std::string(pr.model) + " decode T 1 " + pr.name + " " + std::to_string(pr.rows) + "x" +
         std::to_string(pr.cols) + " " + std::to_string(pr.bits) + "-bit";
}

// The timing shapes of `compare --shapes perf` (issue 13): the largest projections of both
// models and the vocabulary heads, which decide a decode token's time on a GPU. Each matvec
// kernel runs every entry at its own bit width (2, 4, 8) or in bf16, whatever the checkpoints
// store there, so the figures of the kernels can be set side by side. The lm_heads exceed
// lavapipe's 128 MiB storage buffers: there the runner skips them (maxStorageBufferRange).
struct PerfShape {
  const char* name;
  int64_t rows, cols;
};
inline const std::vector<PerfShape>& perf_matvec_shapes() {
  static const std::vector<PerfShape> list = {
      {"A17B in_proj_qkv", 12288, 4096},
      {"A17B o_proj", 4096, 8192},
      {"A3B lm_head", 248320, 2048},
      {"A17B lm_head", 248320, 4096},
  };
  return list;
}

}  // namespace moe::compare
