// The model's shape and conventions, read at run time from the checkpoint (never compile-time
// constants). One field list (visit) drives printing and validation messages.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace moe {

enum class Family { Qwen3_5Moe, Qwen3Next, DeepseekV3 };
// Linear: Gated DeltaNet; Full: gated GQA attention (Qwen); Mla: DeepSeek-V3 Multi-head Latent
// Attention (docs/ops/mla.md "MLA attention").
enum class LayerKind { Linear, Full, Mla };
// Softmax: softmax -> top-k (Qwen, router_topk); NoauxTc: DeepSeek-V3 sigmoid + correction bias +
// group-limited top-k (router_noaux), BF16 gate, ungated shared experts.
enum class RouterKind { Softmax, NoauxTc };

// DeepSeek-V3's MLA and routing dimensions (zero for the Qwen families).
struct MlaConfig {
  int64_t q_lora_rank = 0, kv_lora_rank = 0;
  int64_t qk_nope_dim = 0, qk_rope_dim = 0, v_head_dim = 0;
  int64_t n_group = 1, topk_group = 1, n_shared_experts = 0, first_k_dense_replace = 0;
  double routed_scaling_factor = 1.0;
  // YaRN (rope_parameters / rope_scaling; HF _compute_yarn_parameters); 0 = absent for the mscales.
  double yarn_factor = 1.0, beta_fast = 32.0, beta_slow = 1.0, mscale = 0.0, mscale_all_dim = 0.0;
  int64_t original_max_position = 0;
  bool rope_interleave = true;
  // HF DeepseekV3Attention.scaling: (nope + rope)^-1/2, times get_mscale(factor, mscale_all_dim)^2
  // when mscale_all_dim is set (nonzero).
  double softmax_scale() const;
};

const char* family_name(Family f);

struct ModelConfig {
  Family family = Family::Qwen3_5Moe;
  int64_t hidden = 0, layers = 0, vocab = 0;
  int64_t attn_heads = 0, kv_heads = 0, head_dim = 256;
  int64_t lin_k_heads = 0, lin_v_heads = 0, lin_k_dim = 128, lin_v_dim = 128, conv_kernel = 4;
  int64_t experts = 0, experts_per_tok = 0, moe_inter = 0, shared_inter = 0;
  int64_t dense_inter = 0;  // Qwen3-Next dense MLP layers (mlp_only_layers / decoder_sparse_step)
  bool norm_topk_prob = true;
  bool tie_word_embeddings = false;
  RouterKind router = RouterKind::Softmax;
  MlaConfig mla;
  double rope_theta = 10000.0;  // HF's default when a config names none; real checkpoints say 1e7
  double partial_rotary = 0.25;
  float eps = 1e-6f;
  std::vector<LayerKind> layer_kinds;
  std::vector<bool> layer_moe;  // false: dense SwiGLU MLP (Qwen3-Next; DeepSeek-V3's first layers)
  int default_bits = 4, default_group = 64;
  std::map<std::string, int> bits_override;  // sanitized module name ("model.layers.0.mlp.gate") -> bits

  int64_t rotary_dim() const { return int64_t(double(head_dim) * partial_rotary); }
  int64_t lin_key_total() const { return lin_k_heads * lin_k_dim; }
  int64_t lin_value_total() const { return lin_v_heads * lin_v_dim; }
  int64_t conv_dim() const { return 2 * lin_key_total() + lin_value_total(); }
  int bits_for(const std::string& module) const;

  template <class F>
  void visit(F&& f) const {
    f("family", family_name(family)), f("hidden", hidden), f("layers", layers), f("vocab", vocab);
    f("attn_heads", attn_heads), f("kv_heads", kv_heads), f("head_dim", head_dim);
    f("lin_k_heads", lin_k_heads), f("lin_v_heads", lin_v_heads), f("lin_k_dim", lin_k_dim);
    f("lin_v_dim", lin_v_dim), f("conv_kernel", conv_kernel), f("experts", experts);
    f("experts_per_tok", experts_per_tok), f("moe_inter", moe_inter), f("shared_inter", shared_inter);
    f("rope_theta", rope_theta), f("partial_rotary", partial_rotary), f("eps", eps);
    if (family == Family::DeepseekV3) {
      f("q_lora_rank", mla.q_lora_rank), f("kv_lora_rank", mla.kv_lora_rank), f("qk_nope_head_dim", mla.qk_nope_dim);
      f("qk_rope_head_dim", mla.qk_rope_dim), f("v_head_dim", mla.v_head_dim), f("n_group", mla.n_group);
      f("topk_group", mla.topk_group), f("n_shared_experts", mla.n_shared_experts);
      f("first_k_dense_replace", mla.first_k_dense_replace), f("routed_scaling_factor", mla.routed_scaling_factor);
      f("yarn_factor", mla.yarn_factor), f("original_max_position", mla.original_max_position);
      f("beta_fast", mla.beta_fast), f("beta_slow", mla.beta_slow), f("mscale", mla.mscale);
      f("mscale_all_dim", mla.mscale_all_dim);
    }
  }

  // Checks internal consistency (divisibility, positive sizes); `source` names the file.
  void validate(const std::string& source) const;
  void validate_mla(const std::string& source) const;  // DeepSeek-V3's fields (config_deepseek.cpp)
};

// The DeepSeek-V3 fields of `j` (model_type deepseek_v3) into `c` (config_deepseek.cpp); every
// dimension must be in the file: a missing or inconsistent field is a moe::Error naming `source`,
// the field, what was expected and what was found.
void parse_deepseek_v3(const nlohmann::json& j, const std::string& source, ModelConfig& c);

// From an HF/MLX config.json (flat, or with the text fields under "text_config") or a moeflux
// manifest's "config" block. `source` is the file name used in error messages.
ModelConfig parse_model_config(const nlohmann::json& j, const std::string& source);

// Presets of the real models (shapes as published), for fixtures and benchmarks.
ModelConfig preset_config(const std::string& name);  // "qwen3.5-397b-a17b", "qwen3.6-35b-a3b", "tiny"
std::vector<std::string> preset_names();

}  // namespace moe
