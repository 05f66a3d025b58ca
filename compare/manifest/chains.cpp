#include "compare/manifest/chains.h"

namespace moe::compare {

const std::vector<Chain>& chains() {
  static const std::vector<Chain> kChains = {
      // Gated GQA attention (kernels_cpu/ops/attention.h): append the new tokens' k, v to the
      // caches; scores = q.K * scale with -inf past the causal edge; softmax per row; values =
      // P.V; o = values * sigmoid(gate). Intermediates: scores, probs [T, H, past + T], attn [T, H*D].
      {"attention",
       {{"kv_append", {}, {}},
        {"attention_scores", {}, {}},
        {"attention_softmax", {}, {}},
        {"attention_values", {}, {}},
        {"attention_gate", {}, {}}}},
      // SwiGLU expert (kernels_cpu/ops/swiglu_expert.h): act = silu(gate.x) * (up.x) fused in one
      // kernel, then y = down.act with the quantized matmul.
      {"swiglu_expert",
       {{"expert_gate_up", {}, {}},
        {"matmul_q",
         {{"W.w", "down.w"}, {"W.scales", "down.scales"}, {"W.biases", "down.biases"}, {"x", "act"}, {"y", "y"}},
         {{"rows", "hidden"}, {"cols", "inter"}, {"tokens", "tokens"}, {"bits", "bits"}, {"group_size", "group_size"}}}}},
      // Bucketed prefill MoE (kernels_cpu/ops/moe_permute_fuse.h): act [rows, I] = silu(gate_b x_t) *
      // (up_b x_t) per routed row, then out[t] += sum of t's rows w * (down_b act) (no atomics).
      {"moe_permute_fuse", {{"permute_gate_up", {}, {}}, {"permute_down_scatter", {}, {}}}},
  };
  return kChains;
}

const Chain* find_chain(const std::string& op) {
  for (const Chain& c : chains())
    if (c.op == op) return &c;
  return nullptr;
}

const std::vector<std::string>& stage_ops() {
  static const std::vector<std::string> kStages = {
#define MOE_STAGE(stem, summary) #stem,
#include "compare/manifest/stage_list.def"
#undef MOE_STAGE
  };
  return kStages;
}

}  // namespace moe::compare
