// A loaded MLX / moeflux model written as a GGUF file the way llama.cpp's converter lays it out
// (architectures qwen35moe, qwen3next and deepseek2; docs/gguf.md "Writing a model"), without
// losing a weight wherever ggml has a format that holds it:
//  - a 4-bit MLX matrix (group size a multiple of 32) becomes q4_1: each 32-value half of an MLX
//    group one block with d = scale and m = bias (bf16 values, exact in f16 unless outside f16's
//    range), codes unchanged, so every weight keeps its exact value;
//  - any other MLX matrix (2 or 8 bits, or scales f16 cannot hold), the router and the shared-expert
//    gate (llama.cpp keeps those in f32) become f32, checked exact per weight;
//  - norms, conv, dt_bias as f32; A_log as ssm_a = -exp(A_log) rounded to f32 (llama.cpp's form,
//    the one lossy step: model_gguf.cpp reads it back as log(-ssm_a));
//  - Qwen3.5 value heads tiled and Qwen3-Next's b / a interleaved per key head, as llama.cpp does;
//  - DeepSeek-V3: kv_b_proj split per head into attn_k_b (transposed, f32) and attn_v_b, the BF16
//    router kept BF16; a YaRN mscale other than mscale_all_dim has no deepseek2 form (refused).
// A weight or setting no format holds exactly is an error naming it; nothing is written then.
#pragma once
#include <string>

#include "oracle/model.h"

namespace moe {

void write_gguf_model(const Model& m, const std::string& path);

// deepseek2 stores YaRN's mscale_all_dim as rope.scaling.yarn_log_multiplier = f32(0.1 mscale_all_dim):
// the shortest decimal whose 0.1 multiple rounds to `stored` (0.08f gives 0.8, not the stored value
// / 0.1 = 0.8000000119). The writer refuses a value this does not give back.
double mscale_all_dim_from_log_multiplier(float stored);

}  // namespace moe
