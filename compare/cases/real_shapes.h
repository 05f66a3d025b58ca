// The timing shapes of `compare --shapes perf` (below) and, from kernels_cpu/spec/quant_dot_spec.h,
// the quantized projections of both models at their real shapes (real_projections).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "spec/quant_dot_spec.h"

namespace moe::compare {

using moe::decode_label;
using moe::Projection;
using moe::real_projections;

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
