// The oracle's input formats (targets.h): safetensors, checkpoints, snapshots, mapping files,
// dumps, token files.
#include <climits>
#include <cstdio>
#include <cstring>

#include "core/check.h"
#include "fuzz/support.h"
#include "fuzz/targets.h"
#include "oracle/dump_diff.h"
#include "oracle/model.h"
#include "oracle/safetensors.h"
#include "oracle/snapshot.h"
#include "oracle/tap_map.h"
#include "oracle/tokens.h"

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
      for (int64_t e = 0; e < c.experts; ++e) m->expert(l, e);
  ModelState st = ModelState::make(c, 1);
  forward_one(*m, st);
}

// Every byte of every tensor read (a view past the mapping faults), and the values of the
// dtypes tensor_values knows.
void read_all(const SafetensorsFile& f) {
  unsigned sum = 0;
  for (const std::string& n : f.names_in_file_order()) {
    const TensorInfo& t = *f.find(n);
    if (uint64_t(t.numel()) * dtype_size(t.dtype) != t.bytes)
      invariant_failed(f.path() + ": tensor '" + n + "': numel x dtype size != bytes");
    for (size_t i = 0; i < t.bytes; ++i) sum += t.data[i];
    try {
      tensor_values(t);
    } catch (const Error&) {
      // a dtype tensor_values does not read: reported as such, fine
    }
  }
  for (const auto& [k, v] : f.metadata()) sum += unsigned(k.size() + v.size());
  (void)sum;
}

fs::path write_input(const std::string& name, std::string_view bytes) {
  const fs::path p = scratch() / name;
  write_file(p, bytes);
  return p;
}

}  // namespace

void prepare_models() { fixtures(); }

void safetensors(const uint8_t* data, size_t size) {
  const SafetensorsFile f(write_input("input.safetensors", as_text(data, size)).string());
  read_all(f);
}

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

void tap_map(const uint8_t* data, size_t size) {
  const std::vector<std::string_view> parts = split_parts(data, size);
  const TapMap m = TapMap::parse(std::string(parts[0]), "input.map.json");
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::optional<TapTarget> t = m.map(std::string(parts[i]));
    if (t && t->token < -1) invariant_failed("tap_map: negative token row");
  }
}

void dump_diff(const uint8_t* data, size_t size) {
  const std::vector<std::string_view> parts = split_parts(data, size);
  if (parts.size() < 2) return;
  const SafetensorsFile a(write_input("a.safetensors", parts[0]).string());
  const SafetensorsFile b(write_input("b.safetensors", parts[1]).string());
  std::optional<TapMap> map;
  if (parts.size() > 2) map = TapMap::parse(std::string(parts[2]), "input.map.json");
  const DumpDiff d = diff_dumps(a, b, map ? &*map : nullptr, 1e-5);
  if (d.first_failed >= int64_t(d.taps.size()) || d.failed > d.compared)
    invariant_failed("dump_diff: first_failed or failed out of range");
}

void tokens(const uint8_t* data, size_t size) {
  const std::vector<int32_t> ids = parse_tokens(std::string(as_text(data, size)), "input.tokens");
  // The file path of the CLI gives the same ids.
  const fs::path p = write_input("input.tokens", as_text(data, size));
  if (read_tokens("", p.string(), "run") != ids) invariant_failed("tokens: file and text parse differ");
  for (int32_t id : ids)
    if (id < 0) invariant_failed("tokens: negative id");
}

}  // namespace moe::fuzz
