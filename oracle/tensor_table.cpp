#include "oracle/tensor_table.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>

#include "core/check.h"
#include "oracle/json_read.h"

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
  if (fs::exists(fs::path(dir) / "model_weights.json")) return open_moeflux(dir);
  MOE_CHECK(fs::exists(fs::path(dir) / "config.json"),
            dir << ": neither config.json (MLX checkpoint) nor model_weights.json (moeflux artifacts) found");
  return open_mlx(dir);
}

}  // namespace moe
