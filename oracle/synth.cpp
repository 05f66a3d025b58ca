#include "oracle/synth.h"

#include <cmath>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "oracle/gguf_convert.h"
#include "core/mlx_quantize.h"
#include "core/rng.h"
#include "oracle/atomic_file.h"
#include "oracle/export_moeflux.h"
#include "oracle/safetensors.h"

namespace moe {
namespace fs = std::filesystem;

std::vector<std::string> synthetic_preset_names() {
  return {"tiny", "a3b-2layers", "a17b-2layers", "ds3-tiny", "cogito-2layers"};
}

namespace {

// DeepSeek-V3 config.json fields: Cogito-V2-Preview-671B's (docs/ops/models.md "Shape constants") with `layers` layers
// (the first `dense` dense), or the tiny golden model's shape (fixtures/golden/deepseek_v3_tiny).
nlohmann::json deepseek_config_json(bool real, int64_t layers, int64_t dense) {
  nlohmann::json j = {{"model_type", "deepseek_v3"}, {"num_hidden_layers", layers}, {"first_k_dense_replace", dense},
                      {"rms_norm_eps", 1e-6}, {"rope_theta", 10000.0}, {"n_shared_experts", 1},
                      {"routed_scaling_factor", 2.5}, {"topk_method", "noaux_tc"}, {"scoring_func", "sigmoid"},
                      {"norm_topk_prob", true}, {"hidden_act", "silu"}, {"tie_word_embeddings", false}};
  const int64_t v[13][2] = {{7168, 256}, {128815, 512}, {128, 4}, {1536, 128}, {512, 64}, {128, 32}, {64, 16},
                            {128, 32},   {256, 16},     {8, 4},   {8, 4},      {2048, 64}, {18432, 192}};
  const char* k[13] = {"hidden_size", "vocab_size", "num_attention_heads", "q_lora_rank", "kv_lora_rank",
                       "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "n_routed_experts", "num_experts_per_tok",
                       "n_group", "moe_intermediate_size", "intermediate_size"};
  for (int i = 0; i < 13; ++i) j[k[i]] = v[i][real ? 0 : 1];
  j["topk_group"] = real ? 4 : 2;
  j["num_key_value_heads"] = j["num_attention_heads"];
  j["rope_scaling"] = {{"type", "yarn"}, {"factor", 40.0}, {"original_max_position_embeddings", 4096},
                       {"beta_fast", 32.0}, {"beta_slow", 1.0}, {"mscale", 1.0}, {"mscale_all_dim", real ? 1.0 : 0.8}};
  j["quantization"] = {{"group_size", 64}, {"bits", 4}, {"mode", "affine"}};
  return j;
}

ModelConfig deepseek_preset(const std::string& name, int64_t layers) {
  const bool real = name == "cogito-2layers";
  // Cogito: the first 3 of 61 layers are dense; the 2-layer preset keeps one dense, one MoE.
  MOE_CHECK(layers >= 0 && layers <= (real ? 61 : 0),
            "fixture: --layers " << layers << ", expected " << (real ? "1..61 (the real model's layer count)" : "0 for ds3-tiny"));
  const int64_t n = layers == 0 ? (real ? 2 : 3) : layers, dense = layers == 0 ? 1 : std::min<int64_t>(layers, 3);
  return parse_model_config(deepseek_config_json(real, n, dense), "preset " + name);
}

}  // namespace

ModelConfig synthetic_preset(const std::string& name, int64_t layers) {
  if (name == "ds3-tiny" || name == "cogito-2layers") return deepseek_preset(name, layers);
  MOE_CHECK(layers == 0 || name != "tiny", "fixture: --layers applies to the real-shape presets, not 'tiny'");
  if (name == "tiny") return preset_config("tiny");
  MOE_CHECK(name == "a3b-2layers" || name == "a17b-2layers",
            "fixture: unknown preset '" << name << "' (known: tiny, a3b-2layers, a17b-2layers, ds3-tiny, cogito-2layers)");
  ModelConfig c = preset_config(name == "a3b-2layers" ? "qwen3.6-35b-a3b" : "qwen3.5-397b-a17b");
  MOE_CHECK(layers >= 0 && layers <= c.layers,
            "fixture: --layers " << layers << ", expected 1.." << c.layers << " (the real model's layer count)");
  if (layers == 0) {
    c.layers = 2;
    c.layer_kinds = {LayerKind::Linear, LayerKind::Full};
    c.layer_moe = {true, true};
  } else {
    c.layers = layers;
    c.layer_kinds.resize(size_t(layers));
    c.layer_moe.resize(size_t(layers));
  }
  std::map<std::string, int> keep;
  for (const auto& [k, v] : c.bits_override)
    for (int64_t l = 0; l < c.layers; ++l)
      if (k.rfind("model.layers." + std::to_string(l) + ".", 0) == 0) keep[k] = v;
  c.bits_override = keep;
  c.validate("preset " + name);
  return c;
}

namespace {

// Collects tensors (owned) and writes them as safetensors shards of the model directory `dir`,
// as published checkpoints are split: a shard is written whenever a layer ends with more than
// kShardBytes collected, so memory holds at most about one layer plus a shard (an A17B layer's
// experts alone are 3.7 GB: a whole real-shape model would not fit in a small machine's memory).
// One shard is `model.safetensors`; several are model-0000i-of-0000N.safetensors with
// model.safetensors.index.json, as mlx-lm writes them.
struct Writer {
  static constexpr size_t kShardBytes = size_t(1) << 30;
  struct Owned {
    DType dtype;
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;
  };
  std::string dir, what;
  std::map<std::string, Owned> tensors;
  size_t held = 0;
  std::vector<std::vector<std::string>> shards;  // the tensor names of each shard written

  template <class T>
  void add(const std::string& name, DType dt, std::vector<int64_t> shape, const std::vector<T>& v) {
    Owned o{dt, std::move(shape), {}};
    o.bytes.resize(v.size() * sizeof(T));
    std::memcpy(o.bytes.data(), v.data(), o.bytes.size());
    held += o.bytes.size();
    tensors["language_model." + name] = std::move(o);
  }
  std::string shard_name(size_t i, size_t n) const {
    char buf[64];
    std::snprintf(buf, sizeof buf, "model-%05zu-of-%05zu.safetensors", i + 1, n);
    return n == 1 ? "model.safetensors" : buf;
  }
  // At a layer's end: a shard when enough is held (force: whatever is held, at the end).
  void cut(bool force) {
    if (tensors.empty() || (!force && held < kShardBytes)) return;
    std::vector<TensorOut> out;
    std::vector<std::string> names;
    for (const auto& [name, o] : tensors) out.push_back({name, o.dtype, o.shape, o.bytes.data()}), names.push_back(name);
    const std::string tmp = (fs::path(dir) / ("shard-" + std::to_string(shards.size()) + ".safetensors")).string();
    write_safetensors(tmp, out, {{"format", "mlx"}}, "a shard of " + what);
    shards.push_back(std::move(names));
    tensors.clear(), held = 0;
  }
  // The shards under their final names (known once their count is), and the index where there are several.
  void finish() {
    cut(true);
    nlohmann::json map = nlohmann::json::object();
    for (size_t i = 0; i < shards.size(); ++i) {
      const std::string name = shard_name(i, shards.size());
      fs::rename(fs::path(dir) / ("shard-" + std::to_string(i) + ".safetensors"), fs::path(dir) / name);
      for (const std::string& t : shards[i]) map[t] = name;
    }
    if (shards.size() > 1)
      write_file_atomic((fs::path(dir) / "model.safetensors.index.json").string(), "the shard index of " + what,
                        nlohmann::json{{"metadata", nlohmann::json::object()}, {"weight_map", map}}.dump(1) + "\n");
  }
};

std::vector<bf16> to_bf16(const std::vector<float>& v) {
  std::vector<bf16> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = f32_to_bf16_rne(v[i]);
  return out;
}

// A [lead x rows, cols] quantized Gaussian N(0, sigma^2), generated and quantized a block of rows
// at a time (a real expert stack or vocabulary would not fit as f32 at once). Quantization is per
// row group, so blocking by rows gives the same result as one call.
void add_quant(Writer& w, const std::string& base, Rng rng, int64_t lead, int64_t rows, int64_t cols, int bits,
               double sigma) {
  QuantStorage all;
  const int64_t total = std::max<int64_t>(lead, 1) * rows;
  const int64_t block = std::max<int64_t>(1, (int64_t(1) << 22) / cols);  // ~16 MB of f32 per block
  // Blocks are independent (block b draws from stream b): generated in parallel, joined in order,
  // so the bytes do not depend on the thread count.
  const int64_t nblocks = (total + block - 1) / block;
  std::vector<QuantStorage> parts(static_cast<size_t>(nblocks));
#pragma omp parallel for schedule(dynamic)
  for (int64_t b = 0; b < nblocks; ++b) {
    const int64_t n = std::min(block, total - b * block);
    const std::vector<float> x = rng.fork(uint64_t(b)).normal_vec(n * cols, sigma);
    parts[size_t(b)] = mlx_quantize(x, n, cols, bits, 64);
  }
  for (QuantStorage& q : parts) {
    all.w.insert(all.w.end(), q.w.begin(), q.w.end());
    all.scales.insert(all.scales.end(), q.scales.begin(), q.scales.end());
    all.biases.insert(all.biases.end(), q.biases.begin(), q.biases.end());
    q = QuantStorage();
  }
  std::vector<int64_t> ws{rows, cols * bits / 32}, ss{rows, cols / 64};
  if (lead > 0) ws.insert(ws.begin(), lead), ss.insert(ss.begin(), lead);
  w.add(base + ".weight", DType::U32, ws, all.w);
  w.add(base + ".scales", DType::BF16, ss, all.scales);
  w.add(base + ".biases", DType::BF16, ss, all.biases);
}

}  // namespace

namespace {

// Draws every tensor from its own stream of one root seed, in a fixed order.
struct Gen {
  Writer& w;
  const ModelConfig& c;
  Rng root;
  uint64_t stream = 0;
  Rng next() { return root.fork(++stream); }
  void gauss(const std::string& name, int64_t rows, int64_t cols, double sigma = -1, int64_t lead = 0) {
    add_quant(w, name, next(), lead, rows, cols, c.bits_for(name), sigma > 0 ? sigma : 1.0 / std::sqrt(double(cols)));
  }
  void norm(const std::string& name, int64_t n, double spread) {
    w.add(name, DType::BF16, {n}, to_bf16(next().normal_vec(n, spread, 1.0)));
  }
  void swiglu(const std::string& M, int64_t inter, int64_t lead = 0) {  // gate/up [inter, d], down [d, inter]
    gauss(M + "gate_proj", inter, c.hidden, -1, lead);
    gauss(M + "up_proj", inter, c.hidden, -1, lead);
    gauss(M + "down_proj", c.hidden, inter, -1, lead);
  }
};

void add_linear_attn(Gen& g, const std::string& A) {
  const ModelConfig& c = g.c;
  const int64_t d = c.hidden, C = c.conv_dim(), Vt = c.lin_value_total(), Hv = c.lin_v_heads;
  g.gauss(A + "in_proj_qkv", C, d);
  g.gauss(A + "in_proj_z", Vt, d);
  g.gauss(A + "in_proj_b", Hv, d);
  g.gauss(A + "in_proj_a", Hv, d);
  g.gauss(A + "out_proj", d, Vt);
  g.w.add(A + "conv1d.weight", DType::BF16, {C, c.conv_kernel, 1}, to_bf16(g.next().normal_vec(C * c.conv_kernel, 0.3)));
  std::vector<float> alog(static_cast<size_t>(Hv));
  Rng r = g.next();
  for (float& x : alog) x = float(std::log(1.0 + 15.0 * r.uniform01()));
  g.w.add(A + "A_log", DType::F32, {Hv}, alog);
  g.w.add(A + "dt_bias", DType::BF16, {Hv}, to_bf16(g.next().normal_vec(Hv, 0.5)));
  g.norm(A + "norm.weight", c.lin_v_dim, 0.2);
}

// MLA (DeepSeek RMSNorm weights are w, no +1: stored near 1 like the others).
void add_mla(Gen& g, const std::string& A) {
  const ModelConfig& c = g.c;
  const MlaConfig& m = c.mla;
  const int64_t d = c.hidden, H = c.attn_heads;
  g.gauss(A + "q_a_proj", m.q_lora_rank, d);
  g.norm(A + "q_a_layernorm.weight", m.q_lora_rank, 0.1);
  g.gauss(A + "q_b_proj", H * (m.qk_nope_dim + m.qk_rope_dim), m.q_lora_rank);
  g.gauss(A + "kv_a_proj_with_mqa", m.kv_lora_rank + m.qk_rope_dim, d);
  g.norm(A + "kv_a_layernorm.weight", m.kv_lora_rank, 0.1);
  g.gauss(A + "kv_b_proj", H * (m.qk_nope_dim + m.v_head_dim), m.kv_lora_rank);
  g.gauss(A + "o_proj", d, H * m.v_head_dim);
}

// MoE block: Qwen's quantized router and gated shared expert, or DeepSeek-V3's BF16 gate, F32
// correction bias (as mlx-lm keeps it) and ungated shared experts.
void add_moe(Gen& g, const std::string& M) {
  const ModelConfig& c = g.c;
  const int64_t d = c.hidden, E = c.experts;
  if (c.router == RouterKind::NoauxTc) {
    // Logits std ~ 2 on unit-RMS inputs: sigmoid scores spread over (0.1, 0.9); biases ~ 0.05
    // reorder some near neighbours, as trained ones do.
    g.w.add(M + "gate.weight", DType::BF16, {E, d}, to_bf16(g.next().normal_vec(E * d, 2.0 / std::sqrt(double(d)))));
    g.w.add(M + "gate.e_score_correction_bias", DType::F32, {E}, g.next().normal_vec(E, 0.05));
    g.swiglu(M + "shared_experts.", c.shared_inter);
  } else {
    g.gauss(M + "gate", E, d, 2.0 / std::sqrt(double(d)));  // logits std ~ 2 on unit-RMS inputs
    g.gauss(M + "shared_expert_gate", 1, d);
    g.swiglu(M + "shared_expert.", c.shared_inter);
  }
  g.swiglu(M + "switch_mlp.", c.moe_inter, E);
}

nlohmann::json qwen_config_json(const ModelConfig& c) {
  nlohmann::json text;
  text["model_type"] = "qwen3_5_moe_text";
  text["hidden_size"] = c.hidden, text["num_hidden_layers"] = c.layers, text["vocab_size"] = c.vocab;
  text["num_attention_heads"] = c.attn_heads, text["num_key_value_heads"] = c.kv_heads, text["head_dim"] = c.head_dim;
  text["linear_num_key_heads"] = c.lin_k_heads, text["linear_num_value_heads"] = c.lin_v_heads;
  text["linear_key_head_dim"] = c.lin_k_dim, text["linear_value_head_dim"] = c.lin_v_dim;
  text["linear_conv_kernel_dim"] = c.conv_kernel;
  text["num_experts"] = c.experts, text["num_experts_per_tok"] = c.experts_per_tok;
  text["moe_intermediate_size"] = c.moe_inter, text["shared_expert_intermediate_size"] = c.shared_inter;
  text["rms_norm_eps"] = c.eps;
  text["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", c.rope_theta}, {"partial_rotary_factor", c.partial_rotary}};
  nlohmann::json types = nlohmann::json::array();
  for (LayerKind k : c.layer_kinds) types.push_back(k == LayerKind::Full ? "full_attention" : "linear_attention");
  text["layer_types"] = types;
  nlohmann::json quant = {{"group_size", c.default_group}, {"bits", c.default_bits}, {"mode", "affine"}};
  for (const auto& [k, v] : c.bits_override) quant["language_model." + k] = {{"group_size", c.default_group}, {"bits", v}};
  return {{"model_type", "qwen3_5_moe"}, {"text_config", text}, {"quantization", quant}, {"tie_word_embeddings", false}};
}

// DeepSeek-V3's config.json from the parsed config (parse_deepseek_v3 reads it back the same).
nlohmann::json deepseek_config_from(const ModelConfig& c) {
  const MlaConfig& m = c.mla;
  nlohmann::json j = {{"model_type", "deepseek_v3"}, {"hidden_size", c.hidden}, {"num_hidden_layers", c.layers},
                      {"vocab_size", c.vocab}, {"num_attention_heads", c.attn_heads}, {"num_key_value_heads", c.kv_heads},
                      {"q_lora_rank", m.q_lora_rank}, {"kv_lora_rank", m.kv_lora_rank}, {"qk_nope_head_dim", m.qk_nope_dim},
                      {"qk_rope_head_dim", m.qk_rope_dim}, {"v_head_dim", m.v_head_dim}, {"n_routed_experts", c.experts},
                      {"num_experts_per_tok", c.experts_per_tok}, {"n_group", m.n_group}, {"topk_group", m.topk_group},
                      {"n_shared_experts", m.n_shared_experts}, {"moe_intermediate_size", c.moe_inter},
                      {"intermediate_size", c.dense_inter}, {"first_k_dense_replace", m.first_k_dense_replace},
                      {"routed_scaling_factor", m.routed_scaling_factor}, {"rms_norm_eps", c.eps},
                      {"norm_topk_prob", c.norm_topk_prob}, {"tie_word_embeddings", c.tie_word_embeddings},
                      {"rope_interleave", m.rope_interleave}, {"topk_method", "noaux_tc"}, {"scoring_func", "sigmoid"},
                      {"hidden_act", "silu"}, {"rope_theta", c.rope_theta}};
  j["rope_scaling"] = {{"type", "yarn"}, {"factor", m.yarn_factor}, {"original_max_position_embeddings", m.original_max_position},
                       {"beta_fast", m.beta_fast}, {"beta_slow", m.beta_slow}, {"mscale", m.mscale},
                       {"mscale_all_dim", m.mscale_all_dim}};
  nlohmann::json quant = {{"group_size", c.default_group}, {"bits", c.default_bits}, {"mode", "affine"}};
  for (const auto& [k, v] : c.bits_override) quant[k] = {{"group_size", c.default_group}, {"bits", v}};
  j["quantization"] = quant;
  return j;
}

}  // namespace

void write_synthetic_mlx(const ModelConfig& c, uint64_t seed, const std::string& dir) {
  // Built beside `dir` and renamed into place (oracle/atomic_file.h says what a reader sees).
  StagingDir out(dir, "the MLX fixture");
  Writer w;
  w.dir = out.path(), w.what = "the MLX fixture " + dir;
  Gen g{w, c, Rng(seed)};
  const int64_t d = c.hidden;
  g.gauss("model.embed_tokens", c.vocab, d, 1.0);
  g.gauss("lm_head", c.vocab, d);
  g.norm("model.norm.weight", d, 0.1);
  for (int64_t i = 0; i < c.layers; ++i) {
    const std::string L = "model.layers." + std::to_string(i) + ".";
    g.norm(L + "input_layernorm.weight", d, 0.1);
    g.norm(L + "post_attention_layernorm.weight", d, 0.1);
    const LayerKind kind = c.layer_kinds[size_t(i)];
    if (kind == LayerKind::Linear) {
      add_linear_attn(g, L + "linear_attn.");
    } else if (kind == LayerKind::Mla) {
      add_mla(g, L + "self_attn.");
    } else {
      const std::string A = L + "self_attn.";
      const int64_t H = c.attn_heads, Hkv = c.kv_heads, D = c.head_dim;
      g.gauss(A + "q_proj", 2 * H * D, d);
      g.gauss(A + "k_proj", Hkv * D, d);
      g.gauss(A + "v_proj", Hkv * D, d);
      g.gauss(A + "o_proj", d, H * D);
      g.norm(A + "q_norm.weight", D, 0.1);
      g.norm(A + "k_norm.weight", D, 0.1);
    }
    if (c.layer_moe[size_t(i)]) add_moe(g, L + "mlp.");
    else g.swiglu(L + "mlp.", c.dense_inter);
    w.cut(false);
  }
  w.finish();
  const nlohmann::json cfg = c.family == Family::DeepseekV3 ? deepseek_config_from(c) : qwen_config_json(c);
  write_file_atomic((fs::path(out.path()) / "config.json").string(), "config.json of the MLX fixture " + dir,
                    cfg.dump(1) + "\n");
  out.publish();
}

void write_synthetic(const ModelConfig& c, uint64_t seed, const std::string& dir, const std::string& format) {
  MOE_CHECK(format == "mlx" || format == "moeflux" || format == "gguf",
            "fixture: format '" << format << "', expected mlx, moeflux or gguf");
  if (format == "mlx") return write_synthetic_mlx(c, seed, dir);
  if (format == "gguf") {
    // Through an MLX model in a sibling directory (removed after, also when the conversion fails),
    // converted without loss. A DeepSeek-V3 preset takes mscale = mscale_all_dim: llama.cpp's
    // deepseek2 has no other YaRN form.
    const std::string mlx = dir + ".mlx-intermediate";
    ModelConfig g = c;
    if (g.family == Family::DeepseekV3) g.mla.mscale = g.mla.mscale_all_dim;
    std::error_code ec;
    try {
      write_synthetic_mlx(g, seed, mlx);
      write_gguf_model(*Model::load(mlx), dir);
    } catch (...) {
      fs::remove_all(mlx, ec);
      throw;
    }
    fs::remove_all(mlx, ec);
    MOE_CHECK(!ec, mlx << ": cannot remove the intermediate MLX fixture: " << ec.message());
    return;
  }
  // moeflux: the export's staging directory also holds the intermediate MLX model, removed before
  // publishing, so a kill leaves one temporary tree. The export records a fixed source (not the
  // intermediate's random name): the same seed gives the same bytes.
  StagingDir out(dir, "the moeflux fixture");
  const std::string mlx = (fs::path(out.path()) / "mlx-intermediate").string();
  write_synthetic_mlx(c, seed, mlx);
  export_moeflux_into(mlx, out.path(), dir, "synthetic, seed " + std::to_string(seed));
  std::error_code ec;
  fs::remove_all(mlx, ec);
  MOE_CHECK(!ec, mlx << ": cannot remove the intermediate MLX fixture: " << ec.message());
  out.publish();
}

}  // namespace moe
