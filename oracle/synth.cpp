#include "oracle/synth.h"

#include <cmath>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/mlx_quantize.h"
#include "core/rng.h"
#include "oracle/atomic_file.h"
#include "oracle/export_moeflux.h"
#include "oracle/safetensors.h"

namespace moe {
namespace fs = std::filesystem;

std::vector<std::string> synthetic_preset_names() { return {"tiny", "a3b-2layers", "a17b-2layers"}; }

ModelConfig synthetic_preset(const std::string& name, int64_t layers) {
  MOE_CHECK(layers == 0 || name != "tiny", "fixture: --layers applies to the real-shape presets, not 'tiny'");
  if (name == "tiny") return preset_config("tiny");
  MOE_CHECK(name == "a3b-2layers" || name == "a17b-2layers",
            "fixture: unknown preset '" << name << "' (known: tiny, a3b-2layers, a17b-2layers)");
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

void write_synthetic_mlx(const ModelConfig& c, uint64_t seed, const std::string& dir) {
  // Built beside `dir` and renamed into place (oracle/atomic_file.h says what a reader sees).
  StagingDir out(dir, "the MLX fixture");
  Writer w;
  w.dir = out.path(), w.what = "the MLX fixture " + dir;
  Rng root(seed);
  uint64_t stream = 0;
  auto next = [&] { return root.fork(++stream); };
  const int64_t d = c.hidden;
  auto gauss = [&](const std::string& name, int64_t rows, int64_t cols, double sigma = -1, int64_t lead = 0) {
    add_quant(w, name, next(), lead, rows, cols, c.bits_for(name), sigma > 0 ? sigma : 1.0 / std::sqrt(double(cols)));
  };
  auto norm = [&](const std::string& name, int64_t n, double spread) {
    w.add(name, DType::BF16, {n}, to_bf16(next().normal_vec(n, spread, 1.0)));
  };
  gauss("model.embed_tokens", c.vocab, d, 1.0);
  gauss("lm_head", c.vocab, d);
  norm("model.norm.weight", d, 0.1);
  for (int64_t i = 0; i < c.layers; ++i) {
    const std::string L = "model.layers." + std::to_string(i) + ".";
    norm(L + "input_layernorm.weight", d, 0.1);
    norm(L + "post_attention_layernorm.weight", d, 0.1);
    if (c.layer_kinds[size_t(i)] == LayerKind::Linear) {
      const std::string A = L + "linear_attn.";
      const int64_t C = c.conv_dim(), Vt = c.lin_value_total(), Hv = c.lin_v_heads;
      gauss(A + "in_proj_qkv", C, d);
      gauss(A + "in_proj_z", Vt, d);
      gauss(A + "in_proj_b", Hv, d);
      gauss(A + "in_proj_a", Hv, d);
      gauss(A + "out_proj", d, Vt);
      w.add(A + "conv1d.weight", DType::BF16, {C, c.conv_kernel, 1}, to_bf16(next().normal_vec(C * c.conv_kernel, 0.3)));
      std::vector<float> alog(static_cast<size_t>(Hv));
      Rng r = next();
      for (float& x : alog) x = float(std::log(1.0 + 15.0 * r.uniform01()));
      w.add(A + "A_log", DType::F32, {Hv}, alog);
      w.add(A + "dt_bias", DType::BF16, {Hv}, to_bf16(next().normal_vec(Hv, 0.5)));
      norm(A + "norm.weight", c.lin_v_dim, 0.2);
    } else {
      const std::string A = L + "self_attn.";
      const int64_t H = c.attn_heads, Hkv = c.kv_heads, D = c.head_dim;
      gauss(A + "q_proj", 2 * H * D, d);
      gauss(A + "k_proj", Hkv * D, d);
      gauss(A + "v_proj", Hkv * D, d);
      gauss(A + "o_proj", d, H * D);
      norm(A + "q_norm.weight", D, 0.1);
      norm(A + "k_norm.weight", D, 0.1);
    }
    const std::string M = L + "mlp.";
    gauss(M + "gate", c.experts, d, 2.0 / std::sqrt(double(d)));  // logits std ~ 2 on unit-RMS inputs
    gauss(M + "shared_expert_gate", 1, d);
    gauss(M + "shared_expert.gate_proj", c.shared_inter, d);
    gauss(M + "shared_expert.up_proj", c.shared_inter, d);
    gauss(M + "shared_expert.down_proj", d, c.shared_inter);
    gauss(M + "switch_mlp.gate_proj", c.moe_inter, d, -1, c.experts);
    gauss(M + "switch_mlp.up_proj", c.moe_inter, d, -1, c.experts);
    gauss(M + "switch_mlp.down_proj", d, c.moe_inter, -1, c.experts);
    w.cut(false);
  }
  w.finish();

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
  nlohmann::json cfg = {{"model_type", "qwen3_5_moe"}, {"text_config", text}, {"quantization", quant},
                        {"tie_word_embeddings", false}};
  write_file_atomic((fs::path(out.path()) / "config.json").string(), "config.json of the MLX fixture " + dir,
                    cfg.dump(1) + "\n");
  out.publish();
}

void write_synthetic(const ModelConfig& c, uint64_t seed, const std::string& dir, const std::string& format) {
  MOE_CHECK(format == "mlx" || format == "moeflux", "fixture: format '" << format << "', expected mlx or moeflux");
  if (format == "mlx") return write_synthetic_mlx(c, seed, dir);
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
