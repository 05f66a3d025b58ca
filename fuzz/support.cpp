#include "fuzz/support.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "compare/manifest/manifest.h"
#include "compare/shaders/bundled.h"
#include "core/check.h"
#include "oracle/export_moeflux.h"
#include "oracle/forward.h"
#include "oracle/safetensors.h"
#include "oracle/synth.h"

namespace moe::fuzz {
namespace fs = std::filesystem;

ModelConfig small_config() {
  ModelConfig c;
  c.rope_theta = 1e7;
  c.hidden = 64, c.layers = 2, c.vocab = 16;
  c.attn_heads = 2, c.kv_heads = 1, c.head_dim = 32;
  c.lin_k_heads = 1, c.lin_v_heads = 2, c.lin_k_dim = 32, c.lin_v_dim = 32;
  c.experts = 4, c.experts_per_tok = 2, c.moe_inter = 64, c.shared_inter = 64;
  c.layer_kinds = {LayerKind::Linear, LayerKind::Full};
  c.layer_moe = {true, true};
  for (const char* l : {"0", "1"}) c.bits_override[std::string("model.layers.") + l + ".mlp.gate"] = 8;
  c.validate("fuzz small model");
  return c;
}

namespace {

// The small model's tensors in two shards (layer 1 in the second), and their index.
void split_small_model(Fixtures& f) {
  const SafetensorsFile all((f.mlx_single / "model.safetensors").string());
  std::vector<TensorOut> shard[2];
  nlohmann::ordered_json map = nlohmann::ordered_json::object();
  const std::string names[2] = {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"};
  for (const std::string& n : all.names_in_file_order()) {
    const TensorInfo& t = *all.find(n);
    const int s = n.find(".layers.1.") != std::string::npos ? 1 : 0;
    shard[s].push_back({n, t.dtype, t.shape, t.data});
    map[n] = names[s];
  }
  for (int s = 0; s < 2; ++s) {
    const fs::path p = scratch() / names[s];
    write_safetensors(p.string(), shard[s], {{"format", "mlx"}});
    f.mlx_shards.emplace_back(names[s], read_file(p));
    fs::remove(p);
  }
  f.mlx_index = nlohmann::ordered_json{{"metadata", {{"format", "mlx"}}}, {"weight_map", map}}.dump(1);
}

// The tiny Qwen3-Next golden model's shards, renamed next-*, and its config and index.
void add_next_model(Fixtures& f) {
  const fs::path dir = fs::path(MOE_SOURCE_DIR) / "fixtures/golden/qwen3_next_tiny";
  f.next_config = read_file(dir / "config.json");
  nlohmann::ordered_json idx = nlohmann::ordered_json::parse(read_file(dir / "model.safetensors.index.json"));
  for (auto& [name, file] : idx["weight_map"].items()) file = "next" + file.get<std::string>().substr(5);
  f.next_index = idx.dump(1);
  for (const char* n : {"00001", "00002"}) {
    const std::string file = std::string("-") + n + "-of-00002.safetensors";
    f.mlx_shards.emplace_back("next" + file, read_file(dir / ("model" + file)));
  }
}

void add_moeflux(Fixtures& f) {
  const fs::path dir = scratch() / "fixture_moeflux";
  export_moeflux(f.mlx_single.string(), dir.string());
  f.mf_json = read_file(dir / "model_weights.json");
  f.mf_bin = read_file(dir / "model_weights.bin");
  for (int i = 0; fs::exists(dir / "packed_experts" / ("layer_0" + std::to_string(i) + ".bin")); ++i)
    f.mf_layers.push_back(read_file(dir / "packed_experts" / ("layer_0" + std::to_string(i) + ".bin")));
  fs::remove_all(dir);
}

}  // namespace

const Fixtures& fixtures() {
  static const Fixtures* f = [] {
    auto* x = new Fixtures();
    x->mlx_single = scratch() / "fixture_mlx";
    write_synthetic_mlx(small_config(), 1, x->mlx_single.string());
    split_small_model(*x);
    add_next_model(*x);
    add_moeflux(*x);
    x->model = Model::load(x->mlx_single.string());
    return x;
  }();
  return *f;
}

std::vector<ForeignManifest> foreign_manifests() {
  const std::string src = MOE_SOURCE_DIR;
  return {{"ggml", src + "/tests/foreign/ggml.json"},
          {"foreign_layouts", src + "/tests/foreign/layouts.json"},
          {"metal_port", src + "/tests/foreign/metal_port.json"},
          {"vk_engine", src + "/tests/foreign/vk_engine.json"},
          {"vk_layouts", src + "/tests/vulkan/data/layouts/layouts.json"}};
}

std::string foreign_spirv_name(const std::string& label, const std::string& kernel) {
  return label + "__" + kernel + ".spv";
}

const fs::path& kernel_dir() {
  static const fs::path dir = [] {
    const fs::path d = scratch() / "kernels";
    fs::create_directories(d);
    for (const auto& [name, bytes] : compare::bundled_files())
      if (name.size() > 4 && name.compare(name.size() - 4, 4, ".spv") == 0)
        write_file(d / name, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    for (const ForeignManifest& f : foreign_manifests()) {
      const compare::Manifest m = compare::load_manifest(f.path);
      for (const compare::KernelEntry& k : m.kernels)
        write_file(d / foreign_spirv_name(f.label, k.name),
                   std::string_view(reinterpret_cast<const char*>(k.spirv.data()), k.spirv.size() * 4));
    }
    return d;
  }();
  return dir;
}

void forward_one(const Model& m, ModelState& state) {
  static const std::unique_ptr<OpBackend> be = make_cpu_backend("ref32");
  Forward f(m, *be);
  const int32_t token = 0;
  state.reserve(m.config(), state.pos + 1);
  f.run(std::span<const int32_t>(&token, 1), state);
}

}  // namespace moe::fuzz
