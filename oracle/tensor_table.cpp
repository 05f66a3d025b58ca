#include "oracle/tensor_table.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>

#include "core/check.h"
#include "oracle/json_read.h"

namespace moe {
namespace fs = std::filesystem;

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path);
  MOE_CHECK(in, path << ": cannot open");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    MOE_FAIL(path << ": not valid JSON: " << e.what());
  }
}

namespace {

std::string sanitize(const std::string& name) {
  return name.rfind("language_model.", 0) == 0 ? name.substr(15) : name;
}

bool skipped(const std::string& name) {
  // Vision tower and multi-token-prediction weights are not part of the text forward.
  return name.rfind("vision_tower", 0) == 0 || name.rfind("model.visual", 0) == 0 || name.rfind("mtp.", 0) == 0 ||
         name.rfind("visual.", 0) == 0;
}

TensorTable open_mlx(const std::string& dir) {
  TensorTable t;
  t.format = SourceFormat::Mlx;
  t.dir = dir;
  t.config_source = (fs::path(dir) / "config.json").string();
  t.config = read_json_file(t.config_source);
  std::vector<std::string> files;
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  if (fs::exists(index)) {
    const nlohmann::json idx = read_json_file(index.string());
    MOE_CHECK(idx.contains("weight_map") && idx["weight_map"].is_object(), index.string() << ": no weight_map object");
    for (auto it = idx["weight_map"].begin(); it != idx["weight_map"].end(); ++it) {
      const std::string where = index.string() + ": weight_map[\"" + it.key() + "\"]";
      const std::string f = json_string(*it, where);
      // A shard is a file of this directory: an absolute path or a ".." could name any file
      // (a device that never ends, another checkpoint's shard).
      const fs::path fp(f);
      MOE_CHECK(!f.empty() && fp.is_relative() && std::find(fp.begin(), fp.end(), "..") == fp.end(),
                where << ": \"" << f << "\" is not a file name inside " << dir);
      if (std::find(files.begin(), files.end(), f) == files.end()) files.push_back(f);
    }
  } else {
    for (const auto& e : fs::directory_iterator(dir)) {
      const std::string f = e.path().filename().string();
      if (std::regex_match(f, std::regex("model.*\\.safetensors"))) files.push_back(f);
    }
  }
  std::sort(files.begin(), files.end());
  MOE_CHECK(!files.empty(), dir << ": no model*.safetensors files (and no model.safetensors.index.json)");
  for (const std::string& f : files) {
    const fs::path p = fs::path(dir) / f;
    MOE_CHECK(fs::is_regular_file(p), p.string() << ": listed in model.safetensors.index.json but missing (or not a file)");
    auto shard = std::make_shared<SafetensorsFile>(p.string());
    for (const auto& [name, info] : shard->tensors()) {
      const std::string s = sanitize(name);
      if (skipped(s)) continue;
      MOE_CHECK(!t.tensors.count(s), p.string() << ": tensor '" << name << "' also appears in "
                                                << t.tensors.at(s).file);
      t.tensors.emplace(s, info);
    }
    t.shards.push_back(std::move(shard));
  }
  return t;
}

// The manifest's config block is informational (no engine reads it). The Qwen exporters copy the
// text config into it; convert_cogito_v2.py writes DeepSeek-V3's dimensions without model_type.
// Where the Cogito layout keeps the full config.json (mlx/), that is the config, and every field
// the block also states must agree with it.
void moeflux_config(TensorTable& t, const nlohmann::json& block, const std::string& mpath, const fs::path& mlx_config) {
  if (fs::exists(mlx_config)) {
    t.config_source = mlx_config.string();
    t.config = read_json_file(t.config_source);
    MOE_CHECK(t.config.is_object(), t.config_source << ": config is not a JSON object");
    const nlohmann::json& text = t.config.contains("text_config") ? t.config["text_config"] : t.config;
    for (auto it = block.begin(); it != block.end(); ++it) {
      if (it.key() == "default_bits" || it.key() == "default_group_size" || !text.contains(it.key())) continue;
      MOE_CHECK(text[it.key()] == *it, mpath << ": config block field '" << it.key() << "' is " << it->dump()
                                             << ", expected " << text[it.key()].dump() << " as in " << t.config_source);
    }
    return;
  }
  t.config = block;
  t.config_source = mpath + " (config block)";
  if (!t.config.contains("model_type")) t.config["model_type"] = block.contains("kv_lora_rank") ? "deepseek_v3" : "qwen3_5_moe";
  // The block's quantization defaults stand in for config.json's (per-tensor bits are in the manifest).
  if (!t.config.contains("quantization") && (block.contains("default_bits") || block.contains("default_group_size"))) {
    nlohmann::json q = nlohmann::json::object();
    if (block.contains("default_bits")) q["bits"] = block["default_bits"];
    if (block.contains("default_group_size")) q["group_size"] = block["default_group_size"];
    t.config["quantization"] = q;
  }
}

// `dir` holds model_weights.{json,bin}; `experts` the packed_experts directory; `mlx_config` the
// full config.json where the layout has one.
TensorTable open_moeflux(const std::string& dir, const fs::path& experts, const fs::path& mlx_config) {
  TensorTable t;
  t.format = SourceFormat::Moeflux;
  t.dir = dir;
  t.experts_dir = experts.string();
  const std::string mpath = (fs::path(dir) / "model_weights.json").string();
  const nlohmann::json m = read_json_file(mpath);
  MOE_CHECK(m.contains("tensors") && m["tensors"].is_object(), mpath << ": no \"tensors\" object");
  MOE_CHECK(m.contains("config") && m["config"].is_object(), mpath << ": no \"config\" block (model shape)");
  moeflux_config(t, m["config"], mpath, mlx_config);
  const std::string bpath = (fs::path(dir) / "model_weights.bin").string();
  auto bin = std::make_shared<MappedFile>(bpath);
  for (auto it = m["tensors"].begin(); it != m["tensors"].end(); ++it) {
    const std::string& name = it.key();
    const auto& e = *it;
    MOE_CHECK(e.is_object(), mpath << ": tensor '" << name << "': expected an object, found " << json_shown(e));
    MOE_CHECK(e.contains("offset") && e.contains("size") && e.contains("shape") && e.contains("dtype"),
              mpath << ": tensor '" << name << "' needs offset, size, shape and dtype");
    const std::string where = mpath + ": tensor '" + name + "'";
    TensorInfo info;
    info.name = name;
    info.file = bpath;
    const std::string dt = json_string(e["dtype"], where + ": dtype");
    if (dt == "U32") info.dtype = DType::U32;
    else if (dt == "BF16") info.dtype = DType::BF16;
    else if (dt == "F32") info.dtype = DType::F32;
    else MOE_FAIL(where << " has dtype '" << dt << "', expected U32, BF16 or F32");
    MOE_CHECK(e["shape"].is_array(), where << ": shape: expected an array, found " << json_shown(e["shape"]));
    for (const auto& s : e["shape"]) info.shape.push_back(json_int(s, where + ": shape " + e["shape"].dump(), 0));
    const uint64_t off = json_uint(e["offset"], where + ": offset"), size = json_uint(e["size"], where + ": size");
    MOE_CHECK(off % 64 == 0, where << " offset " << off << " is not 64-byte aligned");
    MOE_CHECK(off <= bin->size() && size <= bin->size() - off,
              where << " spans [" << off << ", " << off << " + " << size << ") past the end of " << bpath << " ("
                    << bin->size() << " bytes)");
    uint64_t need = 0;
    MOE_CHECK(shape_bytes(info.shape, dtype_size(info.dtype), need),
              where << ": " << dt << ' ' << info.shape_string() << " has more than 2^63 elements or bytes");
    MOE_CHECK(need == size, where << ": " << dt << ' ' << info.shape_string() << " needs " << need
                                  << " bytes, the entry says " << size);
    info.data = bin->data() + off;
    info.bytes = size;
    // A U32 tensor without "bits" is 4-bit (CPU-C and MFR read it so).
    if (info.dtype == DType::U32) {
      const int bits = e.contains("bits") ? int(json_int(e["bits"], where + ": bits", 2, 8)) : 4;
      MOE_CHECK(bits == 2 || bits == 4 || bits == 8, where << ": bits " << bits << ", expected 2, 4 or 8");
      t.declared_bits[name] = bits;
    }
    t.tensors.emplace(sanitize(name), std::move(info));
  }
  t.maps.push_back(std::move(bin));
  return t;
}

}  // namespace

const TensorInfo* TensorTable::find(const std::string& name) const {
  auto it = tensors.find(name);
  return it == tensors.end() ? nullptr : &it->second;
}

const TensorInfo& TensorTable::get(const std::string& name) const {
  const TensorInfo* t = find(name);
  MOE_CHECK(t, dir << ": tensor '" << name << "' is missing from the checkpoint");
  return *t;
}

TensorTable open_checkpoint(const std::string& dir) {
  MOE_CHECK(fs::is_directory(dir), dir << ": not a directory (expected an MLX checkpoint or moeflux artifacts)");
  const fs::path d(dir);
  if (fs::exists(d / "model_weights.json")) {
    // Flat (Qwen artifacts), or the artifacts/ directory of a Cogito layout.
    const fs::path parent = fs::weakly_canonical(d).parent_path();
    if (!fs::exists(d / "packed_experts") && fs::exists(parent / "root" / "packed_experts"))
      return open_moeflux(dir, parent / "root" / "packed_experts", parent / "mlx" / "config.json");
    return open_moeflux(dir, d / "packed_experts", d / "mlx" / "config.json");
  }
  if (fs::exists(d / "artifacts" / "model_weights.json"))
    return open_moeflux((d / "artifacts").string(), d / "root" / "packed_experts", d / "mlx" / "config.json");
  MOE_CHECK(fs::exists(fs::path(dir) / "config.json"),
            dir << ": neither config.json (MLX checkpoint) nor model_weights.json or artifacts/model_weights.json "
                   "(moeflux artifacts) found");
  return open_mlx(dir);
}

}  // namespace moe
