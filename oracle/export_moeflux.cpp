#include "oracle/export_moeflux.h"

#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <regex>

#include "core/check.h"
#include "oracle/atomic_file.h"

namespace moe {
namespace fs = std::filesystem;

namespace {

// The non-expert tensors: model_weights.bin (returned) and their manifest entries (`tensors`).
std::vector<uint8_t> pack_weights(const TensorTable& table, const ModelConfig& c, nlohmann::json& tensors) {
  const std::regex expert_re(R"(\.switch_mlp\.(gate_proj|up_proj|down_proj)\.(weight|scales|biases)$)");
  std::vector<uint8_t> bin;
  tensors = nlohmann::json::object();
  for (const auto& [name, info] : table.tensors) {  // std::map: sorted by name, as extract_weights.py
    if (std::regex_search(name, expert_re)) continue;
    bin.resize((bin.size() + 63) / 64 * 64, 0);
    nlohmann::json e;
    e["offset"] = bin.size();
    e["shape"] = info.shape;
    if (name.size() > 6 && name.compare(name.size() - 6, 6, ".A_log") == 0 && info.dtype == DType::BF16) {
      for (int64_t i = 0; i < info.numel(); ++i) {  // the one conversion: widen A_log to F32 (exact)
        bf16 u;
        std::memcpy(&u, info.data + 2 * i, 2);
        const float f = bf16_to_f32(u);
        const auto* b = reinterpret_cast<const uint8_t*>(&f);
        bin.insert(bin.end(), b, b + 4);
      }
      e["dtype"] = "F32";
      e["size"] = info.numel() * 4;
    } else {
      bin.insert(bin.end(), info.data, info.data + info.bytes);
      e["dtype"] = dtype_name(info.dtype);
      e["size"] = info.bytes;
      if (info.dtype == DType::U32) {
        const std::string module = name.substr(0, name.size() - 7);  // strip ".weight"
        e["bits"] = c.bits_for(module);
      }
    }
    tensors[name] = e;
  }
  return bin;
}

}  // namespace

void export_moeflux(const std::string& src_dir, const std::string& out_dir, const std::string& source) {
  // Built beside out_dir and renamed into place (oracle/atomic_file.h says what a reader sees).
  StagingDir out(out_dir, "the moeflux export");
  export_moeflux_into(src_dir, out.path(), out_dir, source);
  out.publish();
}

namespace {

// Routed experts: blob e of MoE layer i at byte e * EXPERT_SIZE of packed/layer_NN.bin
// (docs/ops/formats.md "Packed experts");
// dense layers have no file.
void write_packed_experts(const Model& model, const std::string& src_dir, const fs::path& packed, const std::string& what) {
  const ModelConfig& c = model.config();
  std::error_code ec;
  fs::create_directories(packed, ec);
  MOE_CHECK(!ec, packed.string() << ": cannot create the experts' directory" << what << ": " << ec.message());
  for (int64_t i = 0; i < c.layers; ++i) {
    if (!model.layer(i).moe) continue;
    std::vector<uint8_t> file;
    for (int64_t e = 0; e < c.experts; ++e) {
      const ExpertWeights w = model.expert(i, e);
      MOE_CHECK(w.gate.bits == 4, src_dir << ": layer " << i << " experts are " << w.gate.bits
                                          << "-bit; packed_experts holds 4-bit blobs");
      const std::vector<uint8_t> blob = pack_expert_blob(w);
      file.insert(file.end(), blob.begin(), blob.end());
    }
    char name[32];
    std::snprintf(name, sizeof name, "layer_%02d.bin", int(i));
    write_file_atomic((packed / name).string(), std::string(name) + what, file);
  }
}

// convert_cogito_v2.py's layout.json: the blob's components, the MoE layers.
std::string packed_layout_json(const ModelConfig& c) {
  const std::array<int64_t, 10> off = expert_blob_offsets(c.hidden, c.moe_inter, 4);
  const int64_t d = c.hidden, I = c.moe_inter, G = kExpertGroupSize;
  const std::vector<int64_t> shapes[3] = {{I, d / 8}, {I, d / G}, {I, d / G}};  // gate/up; down swaps d and I
  nlohmann::json comps = nlohmann::json::array();
  for (int k = 0; k < 9; ++k) {
    std::vector<int64_t> shape = k < 6 ? shapes[k % 3] : std::vector<int64_t>{d, k == 6 ? I / 8 : I / G};
    comps.push_back({{"name", kExpertBlobComponents[k]}, {"offset", off[size_t(k)]}, {"size", off[size_t(k) + 1] - off[size_t(k)]},
                     {"dtype", k % 3 == 0 ? "U32" : "BF16"}, {"shape", shape}});
  }
  std::vector<int64_t> moe_layers;
  for (int64_t i = 0; i < c.layers; ++i)
    if (c.layer_moe[size_t(i)]) moe_layers.push_back(i);
  const nlohmann::json j = {{"expert_size", off[9]}, {"num_layers", c.layers}, {"num_experts", c.experts},
                            {"components", comps}, {"moe_layers", moe_layers}};
  return j.dump(2) + "\n";
}

// DeepSeek-V3 / Cogito as convert_cogito_v2.py lays it out (tensor_table.h): artifacts/ (the
// manifest's config block holds DeepSeek's dimensions), root/packed_experts/ (+ layout.json), mlx/
// (config.json and the tokenizer files, copied).
void export_cogito_into(const Model& model, const TensorTable& table, const std::string& src_dir, const fs::path& dir,
                        const std::string& what, const std::string& source) {
  const ModelConfig& c = model.config();
  std::error_code ec;
  for (const char* sub : {"artifacts", "mlx"}) {
    fs::create_directory(dir / sub, ec);
    MOE_CHECK(!ec, (dir / sub).string() << ": cannot create the directory" << what << ": " << ec.message());
  }
  nlohmann::json tensors;
  write_file_atomic((dir / "artifacts" / "model_weights.bin").string(), "artifacts/model_weights.bin" + what,
                    pack_weights(table, c, tensors));
  const nlohmann::json& cfg = table.config;
  nlohmann::json block = nlohmann::json::object();
  for (const char* k : {"hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", "rms_norm_eps",
                        "n_routed_experts", "n_shared_experts", "num_experts_per_tok", "n_group", "topk_group",
                        "first_k_dense_replace", "moe_intermediate_size", "intermediate_size", "qk_nope_head_dim",
                        "qk_rope_head_dim", "v_head_dim", "q_lora_rank", "kv_lora_rank", "rope_theta", "rope_scaling",
                        "routed_scaling_factor"})
    block[k] = cfg.contains(k) ? cfg[k] : nlohmann::json();  // the converter writes null for an absent key
  block["default_bits"] = c.default_bits;
  block["default_group_size"] = c.default_group;
  const nlohmann::json manifest = {{"model", source.empty() ? src_dir : source}, {"num_tensors", tensors.size()},
                                   {"config", block}, {"tensors", tensors}};
  write_file_atomic((dir / "artifacts" / "model_weights.json").string(), "artifacts/model_weights.json" + what,
                    manifest.dump(2) + "\n");
  for (const char* f : {"config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja"}) {
    const fs::path from = fs::path(src_dir) / f;
    if (!fs::exists(from)) continue;
    fs::copy_file(from, dir / "mlx" / f, ec);
    MOE_CHECK(!ec, from.string() << ": cannot copy to " << (dir / "mlx" / f).string() << what << ": " << ec.message());
  }
  const fs::path packed = dir / "root" / "packed_experts";
  write_packed_experts(model, src_dir, packed, what);
  write_file_atomic((packed / "layout.json").string(), "root/packed_experts/layout.json" + what, packed_layout_json(c));
}

}  // namespace

void export_moeflux_into(const std::string& src_dir, const std::string& dir_name, const std::string& out_dir,
                         const std::string& source) {
  auto model = Model::load(src_dir);  // validates everything first
  const ModelConfig& c = model->config();
  const TensorTable table = open_checkpoint(src_dir);
  MOE_CHECK(table.format == SourceFormat::Mlx, src_dir << ": already moeflux artifacts");
  const fs::path dir = dir_name;
  const std::string what = " of the moeflux export " + out_dir;
  if (c.family == Family::DeepseekV3) return export_cogito_into(*model, table, src_dir, dir, what, source);
  nlohmann::json tensors;
  write_file_atomic((dir / "model_weights.bin").string(), "model_weights.bin" + what, pack_weights(table, c, tensors));
  nlohmann::json cfg = table.config.contains("text_config") ? table.config["text_config"] : table.config;
  nlohmann::json block = nlohmann::json::object();
  for (const char* k : {"model_type", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                        "head_dim", "vocab_size", "rms_norm_eps", "num_experts", "num_experts_per_tok",
                        "moe_intermediate_size", "shared_expert_intermediate_size", "full_attention_interval",
                        "linear_num_value_heads", "linear_num_key_heads", "linear_key_head_dim",
                        "linear_value_head_dim", "linear_conv_kernel_dim", "layer_types", "rope_parameters",
                        "norm_topk_prob", "intermediate_size", "mlp_only_layers", "decoder_sparse_step"})
    if (cfg.contains(k)) block[k] = cfg[k];
  block["rope_theta"] = c.rope_theta;
  block["partial_rotary_factor"] = c.partial_rotary;
  block["default_bits"] = c.default_bits;
  block["default_group_size"] = c.default_group;
  nlohmann::json manifest;
  manifest["model"] = source.empty() ? src_dir : source;
  manifest["num_tensors"] = tensors.size();
  manifest["tensors"] = tensors;
  manifest["config"] = block;
  write_file_atomic((dir / "model_weights.json").string(), "model_weights.json" + what, manifest.dump(1) + "\n");

  write_packed_experts(*model, src_dir, dir / "packed_experts", what);
}

}  // namespace moe
