// DeepSeek-V3 / Cogito-V2 config.json (model_type "deepseek_v3"): HF transformers 5.17
// DeepseekV3Config's fields, read strictly. The MLA and routing dimensions have no safe default
// (a wrong one would load a different model), so each must be in the file; only HF's documented
// defaults for flags (norm_topk_prob, rope_interleave, tie_word_embeddings) and the YaRN betas
// and mscales are taken when absent.
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "oracle/config.h"
#include "oracle/json_read.h"

namespace moe {

namespace {

bool has(const nlohmann::json& j, const char* key) { return j.contains(key) && !j[key].is_null(); }

int64_t need_int(const nlohmann::json& j, const char* key, const std::string& source) {
  MOE_CHECK(has(j, key), source << ": field '" << key << "' is missing, expected an integer (required for deepseek_v3)");
  return json_int(j[key], source + ": " + key);
}

double need_number(const nlohmann::json& j, const char* key, const std::string& source) {
  MOE_CHECK(has(j, key), source << ": field '" << key << "' is missing, expected a number (required for deepseek_v3)");
  return json_number(j[key], source + ": " + key);
}

bool bool_or(const nlohmann::json& j, const char* key, bool fallback, const std::string& source) {
  return has(j, key) ? json_bool(j[key], source + ": " + key) : fallback;
}

// A string field that, when present, must have the one value we implement.
void expect_string(const nlohmann::json& j, const char* key, const char* want, const std::string& source) {
  if (!has(j, key)) return;
  const std::string v = json_string(j[key], source + ": " + key);
  MOE_CHECK(v == want, source << ": field '" << key << "' is '" << v << "', expected '" << want << "'");
}

// An integer field that, when present, must equal what the other fields imply.
void expect_int(const nlohmann::json& j, const char* key, int64_t want, const char* why, const std::string& source) {
  if (!has(j, key)) return;
  const int64_t v = json_int(j[key], source + ": " + key);
  MOE_CHECK(v == want, source << ": field '" << key << "' is " << v << ", expected " << want << " (" << why << ")");
}

// YaRN from rope_parameters (HF 5.x) and/or the legacy rope_scaling (mlx-lm reads it): both
// present must agree on every YaRN field.
void parse_yarn(const nlohmann::json& j, const std::string& source, ModelConfig& c) {
  const bool has_rp = j.contains("rope_parameters") && j["rope_parameters"].is_object();
  const bool has_rs = j.contains("rope_scaling") && j["rope_scaling"].is_object();
  MOE_CHECK(has_rp || has_rs, source << ": fields 'rope_parameters' and 'rope_scaling' are both missing, expected the "
                                        "YaRN parameters (rope_type yarn) of deepseek_v3");
  const nlohmann::json& r = has_rp ? j["rope_parameters"] : j["rope_scaling"];
  const std::string where = source + (has_rp ? ": rope_parameters" : ": rope_scaling");
  const std::string type = has(r, "rope_type") ? json_string(r["rope_type"], where + ".rope_type")
                           : has(r, "type")    ? json_string(r["type"], where + ".type")
                                               : "";
  MOE_CHECK(type == "yarn", where << ": rope_type is '" << type << "', expected 'yarn' (the only RoPE implemented for MLA)");
  MOE_CHECK(!has(r, "attention_factor"), where << ": attention_factor is set; expected absent (HF derives it from mscale)");
  MOE_CHECK(!has(r, "truncate") || json_bool(r["truncate"], where + ".truncate"),
            where << ": truncate is false; expected true or absent (HF's default, the only one implemented)");
  MlaConfig& m = c.mla;
  m.yarn_factor = need_number(r, "factor", where);
  m.original_max_position = need_int(r, "original_max_position_embeddings", where);
  m.beta_fast = has(r, "beta_fast") ? json_number(r["beta_fast"], where + ".beta_fast") : 32.0;
  m.beta_slow = has(r, "beta_slow") ? json_number(r["beta_slow"], where + ".beta_slow") : 1.0;
  m.mscale = has(r, "mscale") ? json_number(r["mscale"], where + ".mscale") : 0.0;
  m.mscale_all_dim = has(r, "mscale_all_dim") ? json_number(r["mscale_all_dim"], where + ".mscale_all_dim") : 0.0;
  c.rope_theta = has(r, "rope_theta") ? json_number(r["rope_theta"], where + ".rope_theta") : need_number(j, "rope_theta", source);
  if (has_rp && has_rs) {
    const nlohmann::json& s = j["rope_scaling"];
    for (const char* k : {"factor", "original_max_position_embeddings", "beta_fast", "beta_slow", "mscale", "mscale_all_dim"}) {
      if (!has(s, k) && !has(r, k)) continue;
      MOE_CHECK(has(s, k) && has(r, k) && json_number(s[k], source + ": rope_scaling." + k) ==
                                               json_number(r[k], source + ": rope_parameters." + k),
                source << ": rope_scaling." << k << " = " << (has(s, k) ? s[k].dump() : "absent")
                       << ", expected rope_parameters." << k << " = " << (has(r, k) ? r[k].dump() : "absent"));
    }
  }
  if (has_rp && has(j, "rope_theta"))
    MOE_CHECK(json_number(j["rope_theta"], source + ": rope_theta") == c.rope_theta,
              source << ": rope_theta = " << j["rope_theta"].dump() << ", expected rope_parameters.rope_theta = " << c.rope_theta);
}

double get_mscale(double s, double m) { return s <= 1 ? 1.0 : 0.1 * m * std::log(s) + 1.0; }

}  // namespace

double MlaConfig::softmax_scale() const {
  const double base = 1.0 / std::sqrt(double(qk_nope_dim + qk_rope_dim));
  if (mscale_all_dim == 0.0) return base;
  const double m = get_mscale(yarn_factor, mscale_all_dim);
  return base * m * m;
}

void parse_deepseek_v3(const nlohmann::json& j, const std::string& source, ModelConfig& c) {
  MlaConfig& m = c.mla;
  c.router = RouterKind::NoauxTc;
  c.hidden = need_int(j, "hidden_size", source);
  c.layers = need_int(j, "num_hidden_layers", source);
  c.vocab = need_int(j, "vocab_size", source);
  c.attn_heads = need_int(j, "num_attention_heads", source);
  c.kv_heads = has(j, "num_key_value_heads") ? json_int(j["num_key_value_heads"], source + ": num_key_value_heads") : c.attn_heads;
  MOE_CHECK(has(j, "q_lora_rank"), source << ": field 'q_lora_rank' is missing or null, expected a positive integer "
                                             "(DeepSeek-V2-Lite's unfactored q_proj is not implemented)");
  m.q_lora_rank = need_int(j, "q_lora_rank", source);
  m.kv_lora_rank = need_int(j, "kv_lora_rank", source);
  m.qk_nope_dim = need_int(j, "qk_nope_head_dim", source);
  m.qk_rope_dim = need_int(j, "qk_rope_head_dim", source);
  m.v_head_dim = need_int(j, "v_head_dim", source);
  // HF's DeepseekV3Config sets head_dim = qk_rope_head_dim and qk_head_dim = nope + rope.
  expect_int(j, "qk_head_dim", m.qk_nope_dim + m.qk_rope_dim, "qk_nope_head_dim + qk_rope_head_dim", source);
  expect_int(j, "head_dim", m.qk_rope_dim, "HF's DeepseekV3Config sets head_dim = qk_rope_head_dim", source);
  c.head_dim = m.qk_rope_dim;
  c.experts = need_int(j, "n_routed_experts", source);
  c.experts_per_tok = need_int(j, "num_experts_per_tok", source);
  m.n_group = need_int(j, "n_group", source);
  m.topk_group = need_int(j, "topk_group", source);
  m.n_shared_experts = need_int(j, "n_shared_experts", source);
  c.moe_inter = need_int(j, "moe_intermediate_size", source);
  c.dense_inter = need_int(j, "intermediate_size", source);
  m.first_k_dense_replace = need_int(j, "first_k_dense_replace", source);
  m.routed_scaling_factor = need_number(j, "routed_scaling_factor", source);
  // HF builds the shared experts as one MLP of moe_intermediate_size * n_shared_experts (both
  // bounded first: the product of two corrupt sizes must not overflow).
  for (const auto& [name, v] : {std::pair<const char*, int64_t>{"moe_intermediate_size", c.moe_inter},
                                {"n_shared_experts", m.n_shared_experts}})
    MOE_CHECK(v > 0 && v <= (int64_t(1) << 20), source << ": field '" << name << "' is " << v << ", expected in [1, 2^20]");
  c.shared_inter = c.moe_inter * m.n_shared_experts;
  const double eps = need_number(j, "rms_norm_eps", source);
  MOE_CHECK(std::isfinite(eps) && eps >= 0 && eps <= 1, source << ": rms_norm_eps " << eps << ", expected in [0, 1]");
  c.eps = float(eps);
  c.norm_topk_prob = bool_or(j, "norm_topk_prob", true, source);
  c.tie_word_embeddings = bool_or(j, "tie_word_embeddings", false, source);
  m.rope_interleave = bool_or(j, "rope_interleave", true, source);
  expect_string(j, "topk_method", "noaux_tc", source);
  expect_string(j, "scoring_func", "sigmoid", source);
  expect_string(j, "hidden_act", "silu", source);
  MOE_CHECK(!bool_or(j, "attention_bias", false, source), source << ": field 'attention_bias' is true, expected false");
  // HF 5.17 makes every layer from first_k_dense_replace on an MoE layer and ignores
  // moe_layer_freq; the official code honours it: only 1 means the same thing to both.
  expect_int(j, "moe_layer_freq", 1, "HF ignores it; only 1 agrees with the official code", source);
  parse_yarn(j, source, c);
  c.partial_rotary = 1.0;  // the rope part is its own head (qk_rope_head_dim), fully rotated
  MOE_CHECK(c.layers > 0 && c.layers <= 4096, source << ": num_hidden_layers = " << c.layers << ", expected in [1, 4096]");
  MOE_CHECK(m.first_k_dense_replace >= 0 && m.first_k_dense_replace <= c.layers,
            source << ": first_k_dense_replace = " << m.first_k_dense_replace << ", expected in [0, num_hidden_layers = "
                   << c.layers << "]");
  for (int64_t i = 0; i < c.layers; ++i) {
    c.layer_kinds.push_back(LayerKind::Mla);
    c.layer_moe.push_back(i >= m.first_k_dense_replace);
  }
}

void ModelConfig::validate_mla(const std::string& source) const {
  const MlaConfig& m = mla;
  for (const auto& [name, v] : {std::pair<const char*, int64_t>{"q_lora_rank", m.q_lora_rank}, {"kv_lora_rank", m.kv_lora_rank},
                                {"qk_nope_head_dim", m.qk_nope_dim}, {"qk_rope_head_dim", m.qk_rope_dim},
                                {"v_head_dim", m.v_head_dim}, {"n_group", m.n_group}, {"topk_group", m.topk_group},
                                {"n_shared_experts", m.n_shared_experts}, {"num_attention_heads", attn_heads},
                                {"original_max_position_embeddings", m.original_max_position}})
    MOE_CHECK(v > 0 && v <= (int64_t(1) << 20), source << ": config " << name << " = " << v << ", expected in [1, 2^20]");
  MOE_CHECK(m.qk_rope_dim % 2 == 0, source << ": qk_rope_head_dim = " << m.qk_rope_dim << ", expected even (RoPE pairs)");
  MOE_CHECK(experts % m.n_group == 0 && experts / m.n_group >= 2,
            source << ": n_routed_experts = " << experts << ", expected a multiple of n_group = " << m.n_group
                   << " with >= 2 experts per group (a group scores by its top 2)");
  MOE_CHECK(m.topk_group <= m.n_group, source << ": topk_group = " << m.topk_group << ", expected <= n_group = " << m.n_group);
  MOE_CHECK(experts_per_tok <= m.topk_group * (experts / m.n_group),
            source << ": num_experts_per_tok = " << experts_per_tok << ", expected <= topk_group x experts per group = "
                   << m.topk_group * (experts / m.n_group));
  MOE_CHECK(std::isfinite(m.routed_scaling_factor) && m.routed_scaling_factor > 0,
            source << ": routed_scaling_factor = " << m.routed_scaling_factor << ", expected finite and > 0");
  MOE_CHECK(std::isfinite(m.yarn_factor) && m.yarn_factor >= 1,
            source << ": rope factor = " << m.yarn_factor << ", expected finite and >= 1");
  // The ops take these as f32: each must have a finite f32 value.
  constexpr double kF32Max = 3.4e38;
  for (const auto& [name, v] : {std::pair<const char*, double>{"beta_fast", m.beta_fast}, {"beta_slow", m.beta_slow},
                                {"mscale", m.mscale}, {"mscale_all_dim", m.mscale_all_dim},
                                {"factor", m.yarn_factor}, {"rope_theta", rope_theta},
                                {"routed_scaling_factor", m.routed_scaling_factor}})
    MOE_CHECK(std::isfinite(v) && v >= 0 && v <= kF32Max,
              source << ": " << name << " = " << v << ", expected finite, >= 0 and within f32 range");
  MOE_CHECK(m.beta_fast > 0 && m.beta_slow > 0, source << ": rope beta_fast/beta_slow = " << m.beta_fast << "/"
                                                        << m.beta_slow << ", expected > 0");
  MOE_CHECK(dense_inter > 0 || m.first_k_dense_replace == 0,
            source << ": intermediate_size = " << dense_inter << ", expected > 0 (first_k_dense_replace = "
                   << m.first_k_dense_replace << " dense layers)");
}

}  // namespace moe
