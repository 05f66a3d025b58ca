// The model-shaped input formats (targets.h): checkpoints and snapshots, run on the small model.
#include <cstdio>
#include <cstring>

#include "core/check.h"
#include "fuzz/support.h"
#include "fuzz/targets.h"
#include "oracle/model.h"
#include "oracle/snapshot.h"

namespace moe::fuzz {
namespace fs = std::filesystem;

namespace {

// What the CLI does with a checkpoint: load (every tensor checked), view every routed expert,
// run a token.
void load_and_run(const fs::path& dir) {
  const std::unique_ptr<Model> m = Model::load(dir.string());
  const ModelConfig& c = m->config();
  for (int64_t l = 0; l < c.layers; ++l)
    if (m->layer(l).moe)
      for (int64_t e = 0; e < c.experts; ++e) m->is_gguf() ? (void)m->expert_ggml(l, e) : (void)m->expert(l, e);
  ModelState st = ModelState::make(c, 1);
  forward_one(*m, st);
}

}  // namespace

void prepare_models() { fixtures(); }

void mlx_model(const uint8_t* data, size_t size) {
  const Fixtures& fx = fixtures();
  const fs::path dir = scratch() / "mlx";
  static const bool ready = [&] {
    fs::create_directories(dir);
    for (const auto& [name, bytes] : fx.mlx_shards) write_file(dir / name, bytes);
    return true;
  }();
  (void)ready;
  const std::vector<std::string_view> parts = split_parts(data, size);
  write_file(dir / "config.json", parts[0]);
  if (parts.size() > 1) write_file(dir / "model.safetensors.index.json", parts[1]);
  else fs::remove(dir / "model.safetensors.index.json");
  load_and_run(dir);
}

void gguf_model(const uint8_t* data, size_t size) {
  const fs::path p = scratch() / "input_model.gguf";
  write_file(p, as_text(data, size));
  load_and_run(p);
}

void moeflux(const uint8_t* data, size_t size) {
  const Fixtures& fx = fixtures();
  const std::vector<std::string_view> parts = split_parts(data, size);
  const fs::path dir = scratch() / "moeflux";
  fs::remove_all(dir);
  fs::create_directories(dir / "packed_experts");
  write_file(dir / "model_weights.json", parts[0]);
  write_file(dir / "model_weights.bin", parts.size() > 1 ? parts[1] : std::string_view(fx.mf_bin));
  const size_t given = parts.size() > 2 ? parts.size() - 2 : 0;
  for (size_t i = 0; i < std::max(given, fx.mf_layers.size()); ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "layer_%02d.bin", int(i));
    write_file(dir / "packed_experts" / name, i < given ? parts[i + 2] : std::string_view(fx.mf_layers[i]));
  }
  load_and_run(dir);
}

void snapshot(const uint8_t* data, size_t size) {
  const Fixtures& fx = fixtures();
  const ModelConfig& c = fx.model->config();
  const std::vector<uint8_t> bytes(data, data + size);
  ModelState st = ModelState::make(c, 1);
  snapshot_load(bytes, c, st, "input.mflx", 1);
  // What was restored is what the file said: saved again (same version) it gives the input back.
  uint32_t version = 0;
  std::memcpy(&version, data + 4, 4);
  const std::vector<uint8_t> again = snapshot_save(c, st, int(version));
  if (again.size() > size || std::memcmp(again.data(), data, again.size()) != 0)
    invariant_failed("snapshot: the restored state saves to other bytes than the input's");
  forward_one(*fx.model, st);
}

}  // namespace moe::fuzz
