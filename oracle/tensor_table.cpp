#include "oracle/tensor_table.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>

#include "core/check.h"

namespace moe {
namespace fs = std::filesystem;

namespace {

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  MOE_CHECK(in, path << ": cannot open");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    MOE_FAIL(path << ": not valid JSON: " << e.what());
  }
}

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
  t.config = read_json(t.config_source);
  std::vector<std::string> files;
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  if (fs::exists(index)) {
    const nlohmann::json idx = read_json(index.string());
    MOE_CHECK(idx.contains("weight_map") && idx["weight_map"].is_object(), index.string() << ": no weight_map object");
    for (auto it = idx["weight_map"].begin(); it != idx["weight_map"].end(); ++it) {
      const std::string f = it->get<std::string>();
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
    MOE_CHECK(fs::exists(p), p.string() << ": listed in model.safetensors.index.json but missing");
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

TensorTable open_moeflux(const std::string& dir) {
  TensorTable t;
  t.format = SourceFormat::Moeflux;
  t.dir = dir;
  const std::string mpath = (fs::path(dir) / "model_weights.json").string();
  const nlohmann::json m = read_json(mpath);
  MOE_CHECK(m.contains("tensors") && m["tensors"].is_object(), mpath << ": no \"tensors\" object");
  MOE_CHECK(m.contains("config") && m["config"].is_object(), mpath << ": no \"config\" block (model shape)");
  t.config = m["config"];
  t.config_source = mpath + " (config block)";
  if (!t.config.contains("model_type")) t.config["model_type"] = "qwen3_5_moe";
  const std::string bpath = (fs::path(dir) / "model_weights.bin").string();
  auto bin = std::make_shared<MappedFile>(bpath);
  for (auto it = m["tensors"].begin(); it != m["tensors"].end(); ++it) {
    const std::string& name = it.key();
    const auto& e = *it;
    MOE_CHECK(e.contains("offset") && e.contains("size") && e.contains("shape") && e.contains("dtype"),
              mpath << ": tensor '" << name << "' needs offset, size, shape and dtype");
    TensorInfo info;
    info.name = name;
    info.file = bpath;
    const std::string dt = e["dtype"].get<std::string>();
    if (dt == "U32") info.dtype = DType::U32;
    else if (dt == "BF16") info.dtype = DType::BF16;
    else if (dt == "F32") info.dtype = DType::F32;
    else MOE_FAIL(mpath << ": tensor '" << name << "' has dtype '" << dt << "', expected U32, BF16 or F32");
    for (const auto& s : e["shape"]) info.shape.push_back(s.get<int64_t>());
    const uint64_t off = e["offset"].get<uint64_t>(), size = e["size"].get<uint64_t>();
    MOE_CHECK(off % 64 == 0, mpath << ": tensor '" << name << "' offset " << off << " is not 64-byte aligned");
    MOE_CHECK(off <= bin->size() && size <= bin->size() - off,
              mpath << ": tensor '" << name << "' spans [" << off << ", " << off + size << ") past the end of "
                    << bpath << " (" << bin->size() << " bytes)");
    MOE_CHECK(uint64_t(info.numel()) * dtype_size(info.dtype) == size,
              mpath << ": tensor '" << name << "': " << dt << ' ' << info.shape_string() << " needs "
                    << info.numel() * dtype_size(info.dtype) << " bytes, the entry says " << size);
    info.data = bin->data() + off;
    info.bytes = size;
    // A U32 tensor without "bits" is 4-bit (CPU-C and MFR read it so).
    if (info.dtype == DType::U32) t.declared_bits[name] = e.contains("bits") ? e["bits"].get<int>() : 4;
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
  if (fs::exists(fs::path(dir) / "model_weights.json")) return open_moeflux(dir);
  MOE_CHECK(fs::exists(fs::path(dir) / "config.json"),
            dir << ": neither config.json (MLX checkpoint) nor model_weights.json (moeflux artifacts) found");
  return open_mlx(dir);
}

}  // namespace moe
