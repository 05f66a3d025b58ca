#include "oracle/config.h"

#include <nlohmann/json.hpp>

#include "core/check.h"

namespace moe {

const char* family_name(Family f) { return f == Family::Qwen3Next ? "qwen3_next" : "qwen3_5_moe"; }

int ModelConfig::bits_for(const std::string& module) const {
  auto it = bits_override.find(module);
  return it == bits_override.end() ? default_bits : it->second;
}

void ModelConfig::validate(const std::string& source) const {
  auto pos = [&](const char* name, int64_t v) {
    MOE_CHECK(v > 0, source << ": config " << name << " = " << v << ", expected > 0");
  };
  pos("hidden_size", hidden), pos("num_hidden_layers", layers), pos("vocab_size", vocab);
  pos("num_experts", experts), pos("num_experts_per_tok", experts_per_tok), pos("moe_intermediate_size", moe_inter);
  MOE_CHECK(experts_per_tok <= experts, source << ": num_experts_per_tok " << experts_per_tok << " > num_experts " << experts);
  MOE_CHECK(int64_t(layer_kinds.size()) == layers,
            source << ": layer_types has " << layer_kinds.size() << " entries, expected num_hidden_layers = " << layers);
  bool any_full = false, any_linear = false;
  for (LayerKind k : layer_kinds) (k == LayerKind::Full ? any_full : any_linear) = true;
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
  MOE_CHECK(eps >= 0, source << ": rms_norm_eps " << eps << " < 0");
}

namespace {

template <class T>
T get_or(const nlohmann::json& j, const char* key, T fallback) {
  return j.contains(key) && !j[key].is_null() ? j[key].get<T>() : fallback;
}

}  // namespace

ModelConfig parse_model_config(const nlohmann::json& top, const std::string& source) {
  MOE_CHECK(top.is_object(), source << ": config is not a JSON object");
  const nlohmann::json& j = top.contains("text_config") ? top["text_config"] : top;
  ModelConfig c;
  const std::string mt = get_or<std::string>(top, "model_type", get_or<std::string>(j, "model_type", "qwen3_5_moe"));
  if (mt == "qwen3_next") {
    c.family = Family::Qwen3Next;
  } else {
    MOE_CHECK(mt.rfind("qwen3_5", 0) == 0 || mt.rfind("qwen3_6", 0) == 0,
              source << ": model_type '" << mt << "' is not supported (expected qwen3_5_moe, qwen3_5_moe_text or qwen3_next)");
    c.family = Family::Qwen3_5Moe;
  }
  try {
    c.hidden = get_or<int64_t>(j, "hidden_size", 0);
    c.layers = get_or<int64_t>(j, "num_hidden_layers", 0);
    c.vocab = get_or<int64_t>(j, "vocab_size", 0);
    c.attn_heads = get_or<int64_t>(j, "num_attention_heads", 0);
    c.kv_heads = get_or<int64_t>(j, "num_key_value_heads", 0);
    c.head_dim = get_or<int64_t>(j, "head_dim", 256);
    c.lin_k_heads = get_or<int64_t>(j, "linear_num_key_heads", 0);
    c.lin_v_heads = get_or<int64_t>(j, "linear_num_value_heads", 0);
    c.lin_k_dim = get_or<int64_t>(j, "linear_key_head_dim", 128);
    c.lin_v_dim = get_or<int64_t>(j, "linear_value_head_dim", 128);
    c.conv_kernel = get_or<int64_t>(j, "linear_conv_kernel_dim", 4);
    c.experts = get_or<int64_t>(j, "num_experts", 0);
    c.experts_per_tok = get_or<int64_t>(j, "num_experts_per_tok", 0);
    c.moe_inter = get_or<int64_t>(j, "moe_intermediate_size", 0);
    c.shared_inter = get_or<int64_t>(j, "shared_expert_intermediate_size", 0);
    c.dense_inter = get_or<int64_t>(j, "intermediate_size", 0);
    c.eps = get_or<float>(j, "rms_norm_eps", 1e-6f);
    // Qwen3.5 always renormalises the top-k; Qwen3-Next honours norm_topk_prob.
    c.norm_topk_prob = c.family == Family::Qwen3Next ? get_or<bool>(j, "norm_topk_prob", true) : true;
    // rope_parameters (HF 5.x) or the legacy flat keys.
    const nlohmann::json rp = j.contains("rope_parameters") && j["rope_parameters"].is_object() ? j["rope_parameters"]
                                                                                                : nlohmann::json::object();
    c.rope_theta = get_or<double>(rp, "rope_theta", get_or<double>(j, "rope_theta", 10000.0));
    c.partial_rotary = get_or<double>(rp, "partial_rotary_factor", get_or<double>(j, "partial_rotary_factor", 0.25));
    // Layer kinds: explicit layer_types, else full attention iff (i+1) % interval == 0.
    if (j.contains("layer_types") && j["layer_types"].is_array()) {
      for (const auto& t : j["layer_types"]) {
        const std::string s = t.get<std::string>();
        MOE_CHECK(s == "linear_attention" || s == "full_attention",
                  source << ": layer_types entry '" << s << "', expected linear_attention or full_attention");
        c.layer_kinds.push_back(s == "full_attention" ? LayerKind::Full : LayerKind::Linear);
      }
    } else {
      const int64_t interval = get_or<int64_t>(j, "full_attention_interval", 4);
      MOE_CHECK(interval > 0, source << ": full_attention_interval " << interval << ", expected > 0");
      for (int64_t i = 0; i < c.layers; ++i)
        c.layer_kinds.push_back((i + 1) % interval == 0 ? LayerKind::Full : LayerKind::Linear);
    }
    // MoE layers: every layer for Qwen3.5; Qwen3-Next: not in mlp_only_layers and (i+1) % step == 0.
    std::vector<int64_t> mlp_only;
    if (j.contains("mlp_only_layers") && j["mlp_only_layers"].is_array()) mlp_only = j["mlp_only_layers"].get<std::vector<int64_t>>();
    const int64_t step = c.family == Family::Qwen3Next ? get_or<int64_t>(j, "decoder_sparse_step", 1) : 1;
    MOE_CHECK(step > 0, source << ": decoder_sparse_step " << step << ", expected > 0");
    for (int64_t i = 0; i < c.layers; ++i) {
      bool moe = c.experts > 0 && (i + 1) % step == 0;
      for (int64_t m : mlp_only) moe = moe && m != i;
      c.layer_moe.push_back(moe);
    }
    // Quantization block (mlx-lm): default bits/group and per-module overrides.
    const nlohmann::json q = top.contains("quantization") ? top["quantization"]
                             : top.contains("quantization_config") ? top["quantization_config"]
                                                                   : nlohmann::json::object();
    c.default_bits = get_or<int>(q, "bits", 4);
    c.default_group = get_or<int>(q, "group_size", 64);
    for (auto it = q.begin(); it != q.end(); ++it) {
      if (!it->is_object()) continue;
      std::string name = it.key();
      if (name.rfind("language_model.", 0) == 0) name = name.substr(15);
      const int gs = get_or<int>(*it, "group_size", c.default_group);
      MOE_CHECK(gs == c.default_group, source << ": quantization override for '" << it.key() << "' has group_size "
                                              << gs << "; only " << c.default_group << " is supported");
      c.bits_override[name] = get_or<int>(*it, "bits", c.default_bits);
    }
  } catch (const nlohmann::json::exception& e) {
    MOE_FAIL(source << ": config field has the wrong type: " << e.what());
  }
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
    // The tiny golden model (reference-semantics.md §9): both layer kinds, 8 experts top-2.
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
