#include "oracle/config.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "oracle/json_read.h"

namespace moe {

const char* family_name(Family f) {
  return f == Family::Qwen3Next ? "qwen3_next" : f == Family::DeepseekV3 ? "deepseek_v3" : "qwen3_5_moe";
}

int ModelConfig::bits_for(const std::string& module) const {
  auto it = bits_override.find(module);
  return it == bits_override.end() ? default_bits : it->second;
}

// Sizes beyond these are corrupt files, not models (the largest real ones: hidden 7168, vocab
// 248320, 512 experts, 61 layers); the bounds keep every product of sizes the loader, the state
// and the snapshot form (experts x rows x cols, heads x dims x dims) far from 2^63.
constexpr int64_t kMaxSize = int64_t(1) << 20;
constexpr int64_t kMaxLayers = 4096;

void ModelConfig::validate(const std::string& source) const {
  auto pos = [&](const char* name, int64_t v) {
    MOE_CHECK(v > 0 && v <= kMaxSize, source << ": config " << name << " = " << v << ", expected in [1, " << kMaxSize << "]");
  };
  // Every size within bounds, also those only some layer kinds use (the snapshot header and the
  // state multiply them regardless).
  for (const auto& [name, v] : {std::pair<const char*, int64_t>{"num_attention_heads", attn_heads}, {"num_key_value_heads", kv_heads},
                                {"head_dim", head_dim}, {"linear_num_key_heads", lin_k_heads},
                                {"linear_num_value_heads", lin_v_heads}, {"linear_key_head_dim", lin_k_dim},
                                {"linear_value_head_dim", lin_v_dim}, {"linear_conv_kernel_dim", conv_kernel},
                                {"intermediate_size", dense_inter}})
    MOE_CHECK(v >= 0 && v <= kMaxSize, source << ": config " << name << " = " << v << ", expected in [0, " << kMaxSize << "]");
  pos("hidden_size", hidden), pos("vocab_size", vocab);
  MOE_CHECK(layers > 0 && layers <= kMaxLayers,
            source << ": config num_hidden_layers = " << layers << ", expected in [1, " << kMaxLayers << "]");
  pos("num_experts", experts), pos("num_experts_per_tok", experts_per_tok), pos("moe_intermediate_size", moe_inter);
  pos("shared_expert_intermediate_size", shared_inter);
  MOE_CHECK(default_bits == 2 || default_bits == 4 || default_bits == 8,
            source << ": quantization bits = " << default_bits << ", expected 2, 4 or 8");
  MOE_CHECK(default_group > 0 && default_group <= kMaxSize && default_group % 32 == 0,
            source << ": quantization group_size = " << default_group << ", expected a positive multiple of 32");
  for (const auto& [module, b] : bits_override)
    MOE_CHECK(b == 2 || b == 4 || b == 8, source << ": quantization bits for '" << module << "' = " << b << ", expected 2, 4 or 8");
  MOE_CHECK(experts_per_tok <= experts, source << ": num_experts_per_tok " << experts_per_tok << " > num_experts " << experts);
  MOE_CHECK(int64_t(layer_kinds.size()) == layers,
            source << ": layer_types has " << layer_kinds.size() << " entries, expected num_hidden_layers = " << layers);
  bool any_full = false, any_linear = false;
  for (LayerKind k : layer_kinds) {
    if (k == LayerKind::Full) any_full = true;
    if (k == LayerKind::Linear) any_linear = true;
  }
  // Checked before rotary_dim() converts head_dim x partial_rotary to an integer.
  MOE_CHECK(std::isfinite(partial_rotary) && partial_rotary > 0 && partial_rotary <= 1,
            source << ": partial_rotary_factor " << partial_rotary << ", expected in (0, 1]");
  MOE_CHECK(std::isfinite(rope_theta) && rope_theta > 0, source << ": rope_theta " << rope_theta << ", expected > 0");
  if (any_full) {
    pos("num_attention_heads", attn_heads), pos("num_key_value_heads", kv_heads), pos("head_dim", head_dim);
    MOE_CHECK(attn_heads % kv_heads == 0, source << ": num_attention_heads " << attn_heads
                                                 << " is not a multiple of num_key_value_heads " << kv_heads);
    MOE_CHECK(rotary_dim() % 2 == 0 && rotary_dim() <= head_dim && rotary_dim() > 0,
              source << ": rotary dim " << rotary_dim() << " (head_dim " << head_dim << " x partial_rotary_factor "
                     << partial_rotary << ") must be even, positive and <= head_dim");
  }
  if (any_linear) {
    pos("linear_num_key_heads", lin_k_heads), pos("linear_num_value_heads", lin_v_heads);
    pos("linear_key_head_dim", lin_k_dim), pos("linear_value_head_dim", lin_v_dim), pos("linear_conv_kernel_dim", conv_kernel);
    MOE_CHECK(lin_v_heads % lin_k_heads == 0, source << ": linear_num_value_heads " << lin_v_heads
                                                     << " is not a multiple of linear_num_key_heads " << lin_k_heads);
  }
  MOE_CHECK(std::isfinite(eps) && eps >= 0, source << ": rms_norm_eps " << eps << ", expected finite and >= 0");
  if (family == Family::DeepseekV3) validate_mla(source);
}

namespace {

// The value of `key` in `j` (any JSON: a non-object has no keys), or `fallback` when absent or
// null; a wrong type or an out-of-range number is a moe::Error naming the file and the key.
bool has(const nlohmann::json& j, const char* key) { return j.contains(key) && !j[key].is_null(); }
int64_t int_or(const nlohmann::json& j, const char* key, int64_t fallback, const std::string& source) {
  return has(j, key) ? json_int(j[key], source + ": " + key) : fallback;
}
double number_or(const nlohmann::json& j, const char* key, double fallback, const std::string& source) {
  return has(j, key) ? json_number(j[key], source + ": " + key) : fallback;
}
std::string string_or(const nlohmann::json& j, const char* key, const std::string& fallback, const std::string& source) {
  return has(j, key) ? json_string(j[key], source + ": " + key) : fallback;
}

// Layer kinds: explicit layer_types, else full attention iff (i+1) % interval == 0. MoE layers:
// every layer for Qwen3.5; Qwen3-Next: not in mlp_only_layers and (i+1) % step == 0.
void parse_layers(const nlohmann::json& j, const std::string& source, ModelConfig& c) {
  if (j.contains("layer_types") && j["layer_types"].is_array()) {
    for (const auto& t : j["layer_types"]) {
      const std::string s = json_string(t, source + ": layer_types entry");
      MOE_CHECK(s == "linear_attention" || s == "full_attention",
                source << ": layer_types entry '" << s << "', expected linear_attention or full_attention");
      c.layer_kinds.push_back(s == "full_attention" ? LayerKind::Full : LayerKind::Linear);
    }
  } else {
    const int64_t interval = int_or(j, "full_attention_interval", 4, source);
    MOE_CHECK(interval > 0, source << ": full_attention_interval " << interval << ", expected > 0");
    for (int64_t i = 0; i < c.layers; ++i)
      c.layer_kinds.push_back((i + 1) % interval == 0 ? LayerKind::Full : LayerKind::Linear);
  }
  std::vector<int64_t> mlp_only;
  if (j.contains("mlp_only_layers") && j["mlp_only_layers"].is_array())
    for (const auto& m : j["mlp_only_layers"]) mlp_only.push_back(json_int(m, source + ": mlp_only_layers entry"));
  const int64_t step = c.family == Family::Qwen3Next ? int_or(j, "decoder_sparse_step", 1, source) : 1;
  MOE_CHECK(step > 0, source << ": decoder_sparse_step " << step << ", expected > 0");
  for (int64_t i = 0; i < c.layers; ++i) {
    bool moe = c.experts > 0 && (i + 1) % step == 0;
    for (int64_t m : mlp_only) moe = moe && m != i;
    c.layer_moe.push_back(moe);
  }
}

// The quantization block (mlx-lm): default bits/group and per-module overrides.
void parse_quantization(const nlohmann::json& top, const std::string& source, ModelConfig& c) {
  const nlohmann::json q = top.contains("quantization") ? top["quantization"]
                           : top.contains("quantization_config") ? top["quantization_config"]
                                                                 : nlohmann::json::object();
  c.default_bits = int(int_or(q, "bits", 4, source + ": quantization"));
  c.default_group = int(int_or(q, "group_size", 64, source + ": quantization"));
  MOE_CHECK(c.default_bits == 2 || c.default_bits == 4 || c.default_bits == 8,
            source << ": quantization bits = " << c.default_bits << ", expected 2, 4 or 8");
  for (auto it = q.begin(); it != q.end(); ++it) {
    if (!it->is_object()) continue;
    std::string name = it.key();
    if (name.rfind("language_model.", 0) == 0) name = name.substr(15);
    const std::string where = source + ": quantization override '" + it.key() + "'";
    const int64_t gs = int_or(*it, "group_size", c.default_group, where);
    MOE_CHECK(gs == c.default_group, where << " has group_size " << gs << "; only " << c.default_group << " is supported");
    c.bits_override[name] = int(int_or(*it, "bits", c.default_bits, where));
    MOE_CHECK(c.bits_override[name] == 2 || c.bits_override[name] == 4 || c.bits_override[name] == 8,
              where << " has bits " << c.bits_override[name] << ", expected 2, 4 or 8");
  }
}

}  // namespace

ModelConfig parse_model_config(const nlohmann::json& top, const std::string& source) {
  MOE_CHECK(top.is_object(), source << ": config is not a JSON object");
  const nlohmann::json& j = top.contains("text_config") ? top["text_config"] : top;
  ModelConfig c;
  const std::string mt = string_or(top, "model_type", string_or(j, "model_type", "qwen3_5_moe", source), source);
  if (mt == "deepseek_v3") {
    c.family = Family::DeepseekV3;
    parse_deepseek_v3(j, source, c);
    parse_quantization(top, source, c);
    c.validate(source);
    return c;
  }
  if (mt == "qwen3_next") {
    c.family = Family::Qwen3Next;
  } else {
    MOE_CHECK(mt.rfind("qwen3_5", 0) == 0 || mt.rfind("qwen3_6", 0) == 0,
              source << ": model_type '" << mt << "' is not supported (expected qwen3_5_moe, qwen3_5_moe_text, qwen3_next or deepseek_v3)");
    c.family = Family::Qwen3_5Moe;
  }
  c.hidden = int_or(j, "hidden_size", 0, source);
  c.layers = int_or(j, "num_hidden_layers", 0, source);
  c.vocab = int_or(j, "vocab_size", 0, source);
  c.attn_heads = int_or(j, "num_attention_heads", 0, source);
  c.kv_heads = int_or(j, "num_key_value_heads", 0, source);
  c.head_dim = int_or(j, "head_dim", 256, source);
  c.lin_k_heads = int_or(j, "linear_num_key_heads", 0, source);
  c.lin_v_heads = int_or(j, "linear_num_value_heads", 0, source);
  c.lin_k_dim = int_or(j, "linear_key_head_dim", 128, source);
  c.lin_v_dim = int_or(j, "linear_value_head_dim", 128, source);
  c.conv_kernel = int_or(j, "linear_conv_kernel_dim", 4, source);
  c.experts = int_or(j, "num_experts", 0, source);
  c.experts_per_tok = int_or(j, "num_experts_per_tok", 0, source);
  c.moe_inter = int_or(j, "moe_intermediate_size", 0, source);
  c.shared_inter = int_or(j, "shared_expert_intermediate_size", 0, source);
  c.dense_inter = int_or(j, "intermediate_size", 0, source);
  // In range before the float conversion (a double past FLT_MAX has no float value).
  const double eps = number_or(j, "rms_norm_eps", 1e-6, source);
  MOE_CHECK(std::isfinite(eps) && eps >= 0 && eps <= 1, source << ": rms_norm_eps " << eps << ", expected in [0, 1]");
  c.eps = float(eps);
  // Qwen3.5 always renormalises the top-k; Qwen3-Next honours norm_topk_prob.
  c.norm_topk_prob = c.family != Family::Qwen3Next || !has(j, "norm_topk_prob") ||
                     json_bool(j["norm_topk_prob"], source + ": norm_topk_prob");
  // rope_parameters (HF 5.x) or the legacy flat keys.
  const nlohmann::json rp = j.contains("rope_parameters") && j["rope_parameters"].is_object() ? j["rope_parameters"]
                                                                                              : nlohmann::json::object();
  c.rope_theta = number_or(rp, "rope_theta", number_or(j, "rope_theta", 10000.0, source), source + ": rope_parameters");
  c.partial_rotary = number_or(rp, "partial_rotary_factor", number_or(j, "partial_rotary_factor", 0.25, source),
                               source + ": rope_parameters");
  // Bounded before the per-layer lists are built.
  MOE_CHECK(c.layers > 0 && c.layers <= kMaxLayers,
            source << ": config num_hidden_layers = " << c.layers << ", expected in [1, " << kMaxLayers << "]");
  parse_layers(j, source, c);
  parse_quantization(top, source, c);
  c.validate(source);
  return c;
}

std::vector<std::string> preset_names() { return {"qwen3.5-397b-a17b", "qwen3.6-35b-a3b", "tiny"}; }

ModelConfig preset_config(const std::string& name) {
  ModelConfig c;
  c.rope_theta = 1e7;
  if (name == "qwen3.5-397b-a17b" || name == "qwen3.6-35b-a3b") {
    const bool big = name == "qwen3.5-397b-a17b";
    c.hidden = big ? 4096 : 2048;
    c.layers = big ? 60 : 40;
    c.vocab = 248320;
    c.attn_heads = big ? 32 : 16, c.kv_heads = 2, c.head_dim = 256;
    c.lin_k_heads = 16, c.lin_v_heads = big ? 64 : 32;
    c.experts = big ? 512 : 256, c.experts_per_tok = big ? 10 : 8;
    c.moe_inter = big ? 1024 : 512, c.shared_inter = big ? 1024 : 512;
  } else if (name == "tiny") {
    // The tiny golden model (docs/ops/verification.md "Golden-fixture recipe"): both layer kinds, 8 experts top-2.
    c.hidden = 256, c.layers = 4, c.vocab = 512;
    c.attn_heads = 4, c.kv_heads = 2, c.head_dim = 64;
    c.lin_k_heads = 2, c.lin_v_heads = 4, c.lin_k_dim = 64, c.lin_v_dim = 64;
    c.experts = 8, c.experts_per_tok = 2, c.moe_inter = 64, c.shared_inter = 64;
  } else {
    MOE_FAIL("unknown preset '" << name << "' (known: qwen3.5-397b-a17b, qwen3.6-35b-a3b, tiny)");
  }
  for (int64_t i = 0; i < c.layers; ++i) {
    c.layer_kinds.push_back((i + 1) % 4 == 0 ? LayerKind::Full : LayerKind::Linear);
    c.layer_moe.push_back(true);
    // Qwen3.6-35B-A3B (and the tiny model, built the same way) quantize the router and the
    // shared-expert gate at 8 bits (mlx-lm quant_predicate); A17B is 4-bit throughout.
    if (name != "qwen3.5-397b-a17b") {
      c.bits_override["model.layers." + std::to_string(i) + ".mlp.gate"] = 8;
      c.bits_override["model.layers." + std::to_string(i) + ".mlp.shared_expert_gate"] = 8;
    }
  }
  c.validate("preset " + name);
  return c;
}

}  // namespace moe
