#include "oracle/export_moeflux.h"

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

void export_moeflux_into(const std::string& src_dir, const std::string& dir_name, const std::string& out_dir,
                         const std::string& source) {
  auto model = Model::load(src_dir);  // validates everything first
  const ModelConfig& c = model->config();
  // Cogito's artifacts (convert_cogito_v2.py: MLA tensors, MoE layers only in packed_experts,
  // its manifest's config block) are another layout than the Qwen one written below.
  MOE_CHECK(c.family != Family::DeepseekV3,
            src_dir << ": exporting DeepSeek-V3 to moeflux artifacts is not implemented (Cogito's layout differs)");
  const TensorTable table = open_checkpoint(src_dir);
  MOE_CHECK(table.format == SourceFormat::Mlx, src_dir << ": already moeflux artifacts");
  const fs::path dir = dir_name;
  const std::string what = " of the moeflux export " + out_dir;
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

  // Experts: blob e of layer i at byte e * EXPERT_SIZE (§2.3).
  std::error_code ec;
  fs::create_directory(dir / "packed_experts", ec);
  MOE_CHECK(!ec, (dir / "packed_experts").string() << ": cannot create the experts' directory" << what << ": "
                                                   << ec.message());
  for (int64_t i = 0; i < c.layers; ++i) {
    if (!model->layer(i).moe) continue;
    std::vector<uint8_t> file;
    for (int64_t e = 0; e < c.experts; ++e) {
      const ExpertWeights w = model->expert(i, e);
      MOE_CHECK(w.gate.bits == 4, src_dir << ": layer " << i << " experts are " << w.gate.bits
                                          << "-bit; packed_experts holds 4-bit blobs");
      const std::vector<uint8_t> blob = pack_expert_blob(w);
      file.insert(file.end(), blob.begin(), blob.end());
    }
    char name[32];
    std::snprintf(name, sizeof name, "layer_%02d.bin", int(i));
    write_file_atomic((dir / "packed_experts" / name).string(), std::string(name) + what, file);
  }
}

}  // namespace moe
