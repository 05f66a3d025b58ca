// A loaded MLX / moeflux model of a Qwen family written as a GGUF file the way llama.cpp's converter
// lays it out (architectures qwen35moe and qwen3next; docs/gguf.md "Writing a model"), without
// losing a weight wherever ggml has a format that holds it:
//  - a 4-bit MLX matrix (group size a multiple of 32) becomes q4_1: each 32-value half of an MLX
//    group one block with d = scale and m = bias (bf16 values, exact in f16 unless outside f16's
//    range), codes unchanged, so every weight keeps its exact value;
//  - any other MLX matrix (2 or 8 bits, or scales f16 cannot hold), the router and the shared-expert
//    gate (llama.cpp keeps those in f32) become f32, checked exact per weight;
//  - norms, conv, dt_bias as f32; A_log as ssm_a = -exp(A_log) rounded to f32 (llama.cpp's form,
//    the one lossy step: model_gguf.cpp reads it back as log(-ssm_a));
//  - Qwen3.5 value heads tiled and Qwen3-Next's b / a interleaved per key head, as llama.cpp does.
// A weight no format holds exactly is an error naming the tensor; nothing is written then.
// DeepSeek-V3 models are refused (the GGUF side of MLA is not read yet).
#pragma once
#include <string>

#include "oracle/model.h"

namespace moe {

void write_gguf_model(const Model& m, const std::string& path);

}  // namespace moe
