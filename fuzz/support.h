// What the model-shaped fuzz targets share besides support_io.h: the fixtures made once per
// process — a small synthetic model in MLX form (two shards) and in moeflux form, the tiny
// Qwen3-Next golden shards, and the bundled kernels' SPIR-V.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/support_io.h"
#include "oracle/config.h"
#include "oracle/model.h"
#include "oracle/state.h"

namespace moe::fuzz {

// The small model every model-shaped target runs against: qwen3_5_moe, hidden 64, one
// linear-attention and one full-attention layer, 4 experts (router at 8 bits), vocabulary 16.
ModelConfig small_config();

struct Fixtures {
  std::filesystem::path mlx_single;  // config.json + model.safetensors (write_synthetic_mlx)
  // The shard files a fuzzed MLX directory gets: model-0000{1,2}-of-00002.safetensors (the
  // small model split by layer) and next-0000{1,2}-of-00002.safetensors (the tiny Qwen3-Next
  // golden model). Without an index the loader globs model*.safetensors: the small model.
  std::vector<std::pair<std::string, std::string>> mlx_shards;  // file name, bytes
  std::string mlx_index;       // model.safetensors.index.json of the small model's shards
  std::string next_config;     // the golden Qwen3-Next config.json
  std::string next_index;      // its index, naming the next-* shards
  // The small model exported to moeflux artifacts: the files' bytes.
  std::string mf_json, mf_bin;
  std::vector<std::string> mf_layers;  // packed_experts/layer_NN.bin
  std::unique_ptr<Model> model;        // the small model, loaded
};
const Fixtures& fixtures();

// A manifest's folder for the manifest target: every bundled kernel's .spv, and the kernels of
// the foreign corpus (foreign_manifests(), GLSL compiled once per process) as
// foreign_spirv_name(label, kernel). Manifests there name SPIR-V only: compiling fuzzed GLSL
// would fuzz glslang, not the manifest parser.
const std::filesystem::path& kernel_dir();
struct ForeignManifest {
  std::string label, path;  // a short unique name, the file in the source tree
};
std::vector<ForeignManifest> foreign_manifests();
std::string foreign_spirv_name(const std::string& label, const std::string& kernel);

// Runs one decode token (id 0) through `m` on the ref32 tier from `state`.
void forward_one(const Model& m, ModelState& state);

}  // namespace moe::fuzz
