// Every tensor of a checkpoint by its sanitized name ("model.layers.0.mlp.gate.weight": the
// "language_model." prefix stripped), from either model source:
//  - an MLX checkpoint directory: config.json + model*.safetensors (+ model.safetensors.index.json);
//  - moeflux/flash-moe artifacts: model_weights.json + model_weights.bin, the routed experts in
//    packed_experts/layer_NN.bin (docs/ops/formats.md "model_weights.bin and model_weights.json",
//    "Packed experts", "Cogito artifact layout"), either flat in one directory (the Qwen
//    artifacts) or as convert_cogito_v2.py lays out DeepSeek-V3 / Cogito: <parent>/artifacts/
//    (the manifest and blob), <parent>/root/packed_experts/ (+ layout.json), <parent>/mlx/
//    (config.json). The parent or its artifacts/ directory may be given.
// All data stays memory-mapped.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "oracle/safetensors.h"

namespace moe {

enum class SourceFormat { Mlx, Moeflux };

struct TensorTable {
  SourceFormat format = SourceFormat::Mlx;
  std::string dir;
  nlohmann::json config;      // config.json, or the manifest's "config" block
  std::string config_source;  // its path, for messages
  std::map<std::string, TensorInfo> tensors;
  std::map<std::string, int> declared_bits;  // moeflux manifest "bits" per U32 tensor
  std::string experts_dir;                   // moeflux: the packed_experts directory
  std::vector<std::shared_ptr<SafetensorsFile>> shards;
  std::vector<std::shared_ptr<MappedFile>> maps;

  const TensorInfo* find(const std::string& name) const;
  // Throws "<dir>: tensor '<name>' is missing" naming where it was looked for.
  const TensorInfo& get(const std::string& name) const;
};

// A JSON file, parsed; an unreadable or malformed file is an error naming it.
nlohmann::json read_json_file(const std::string& path);

// Detects the format from the directory's contents.
TensorTable open_checkpoint(const std::string& dir);

}  // namespace moe
