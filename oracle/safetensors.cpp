#include "oracle/safetensors.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/check.h"
#include "oracle/atomic_file.h"
#include "oracle/json_read.h"

namespace moe {
namespace {

struct DTypeRow {
  DType d;
  const char* name;
  size_t size;
};
constexpr DTypeRow kDTypes[] = {
    {DType::F32, "F32", 4}, {DType::F64, "F64", 8}, {DType::F16, "F16", 2}, {DType::BF16, "BF16", 2},
    {DType::U8, "U8", 1},   {DType::I8, "I8", 1},   {DType::U16, "U16", 2}, {DType::I16, "I16", 2},
    {DType::U32, "U32", 4}, {DType::I32, "I32", 4}, {DType::U64, "U64", 8}, {DType::I64, "I64", 8},
    {DType::BOOL, "BOOL", 1},
};

// The header may not exceed this (the format's own limit is 100 MB).
constexpr uint64_t kMaxHeader = 100u << 20;

}  // namespace

const char* dtype_name(DType d) {
  for (const auto& r : kDTypes)
    if (r.d == d) return r.name;
  return "?";
}
size_t dtype_size(DType d) {
  for (const auto& r : kDTypes)
    if (r.d == d) return r.size;
  return 0;
}

bool shape_bytes(const std::vector<int64_t>& shape, size_t elem_size, uint64_t& bytes) {
  // numel() is int64: the element count must fit it too, not only the byte count.
  int64_t n = 1;
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return false;
  return !__builtin_mul_overflow(uint64_t(n), uint64_t(elem_size), &bytes);
}

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

std::string TensorInfo::shape_string() const {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << ']';
  return os.str();
}

SafetensorsFile::SafetensorsFile(const std::string& path) : map_(path) {
  const size_t size = map_.size();
  MOE_CHECK(size >= 8, path << ": not a safetensors file: " << size << " bytes, expected at least an 8-byte header length");
  uint64_t hlen = 0;
  std::memcpy(&hlen, map_.data(), 8);
  MOE_CHECK(hlen <= kMaxHeader && hlen <= size - 8,
            path << ": header length " << hlen << " is past the end of the " << size << "-byte file (corrupt or truncated)");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(map_.data() + 8, map_.data() + 8 + hlen);
  } catch (const nlohmann::json::exception& e) {
    MOE_FAIL(path << ": header is not valid JSON: " << e.what());
  }
  MOE_CHECK(header.is_object(), path << ": header is not a JSON object");
  const uint8_t* base = map_.data() + 8 + hlen;
  const uint64_t data_size = size - 8 - hlen;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      MOE_CHECK(it->is_object(), path << ": __metadata__ is not an object");
      for (auto m = it->begin(); m != it->end(); ++m)
        metadata_[m.key()] = m->is_string() ? m->get<std::string>() : m->dump();
      continue;
    }
    const std::string& name = it.key();
    const auto& e = *it;
    MOE_CHECK(e.is_object() && e.contains("dtype") && e.contains("shape") && e.contains("data_offsets"),
              path << ": tensor '" << name << "': entry needs dtype, shape and data_offsets");
    TensorInfo t;
    t.name = name;
    t.file = path;
    const std::string where = path + ": tensor '" + name + "'";
    const std::string dt = json_string(e["dtype"], where + ": dtype");
    const DTypeRow* row = nullptr;
    for (const auto& r : kDTypes)
      if (dt == r.name) row = &r;
    MOE_CHECK(row, where << ": unknown dtype '" << dt << "'");
    t.dtype = row->d;
    MOE_CHECK(e["shape"].is_array(), where << ": shape: expected an array, found " << json_shown(e["shape"]));
    for (const auto& s : e["shape"]) t.shape.push_back(json_int(s, where + ": shape " + e["shape"].dump(), 0));
    const auto& off = e["data_offsets"];
    MOE_CHECK(off.is_array() && off.size() == 2 && off[0].is_number_unsigned() && off[1].is_number_unsigned(),
              path << ": tensor '" << name << "': bad data_offsets " << off.dump());
    const uint64_t b = off[0].get<uint64_t>(), en = off[1].get<uint64_t>();
    MOE_CHECK(b <= en && en <= data_size, path << ": tensor '" << name << "': data_offsets [" << b << ", " << en
                                                << ") past the end of the data (" << data_size << " bytes; truncated file?)");
    t.bytes = size_t(en - b);
    uint64_t need = 0;
    MOE_CHECK(shape_bytes(t.shape, row->size, need), where << ": " << dt << ' ' << t.shape_string()
                                                          << " has more than 2^63 elements or bytes");
    MOE_CHECK(need == t.bytes, where << ": " << dt << ' ' << t.shape_string() << " needs " << need
                                     << " bytes, the entry spans " << t.bytes);
    t.data = base + b;
    tensors_.emplace(name, std::move(t));
  }
}

const TensorInfo* SafetensorsFile::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

std::vector<std::string> SafetensorsFile::names_in_file_order() const {
  std::vector<std::string> names;
  for (const auto& [n, t] : tensors_) names.push_back(n);
  std::sort(names.begin(), names.end(),
            [&](const std::string& a, const std::string& b) { return tensors_.at(a).data < tensors_.at(b).data; });
  return names;
}

void write_safetensors(const std::string& path, const std::vector<TensorOut>& tensors,
                       const std::map<std::string, std::string>& metadata, const std::string& what) {
  nlohmann::ordered_json header;
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  std::vector<size_t> sizes;
  for (const TensorOut& t : tensors) {
    int64_t n = 1;
    for (int64_t s : t.shape) n *= s;
    const size_t bytes = size_t(n) * dtype_size(t.dtype);
    MOE_CHECK(!header.contains(t.name), path << ": duplicate tensor name '" << t.name << "'");
    header[t.name] = {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    sizes.push_back(bytes);
    offset += bytes;
  }
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');
  AtomicFile f(path, what);
  const uint64_t hlen = h.size();
  f.write(&hlen, 8);
  f.write(h);
  for (size_t i = 0; i < tensors.size(); ++i) f.write(tensors[i].data, sizes[i]);
  f.commit();
}

}  // namespace moe
