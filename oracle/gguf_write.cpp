// Writing GGUF files (the layout: oracle/gguf.h): version 3, little-endian, atomic. The file is
// built in memory: it writes fixtures and test files, not full-size models.
#include <bit>
#include <cstring>
#include <set>

#include "core/check.h"
#include "oracle/atomic_file.h"
#include "oracle/gguf.h"

namespace moe {
namespace {

static_assert(std::endian::native == std::endian::little, "GGUF is written by copying little-endian bytes");

struct Out {
  std::string bytes;
  template <class T>
  void put(T v) {
    bytes.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void str(const std::string& s) {
    put<uint64_t>(s.size());
    bytes += s;
  }
  void pad_to(uint64_t alignment) { bytes.resize((bytes.size() + alignment - 1) / alignment * alignment, '\0'); }
  void value(const GgufValue& v, const std::string& what);
};

void Out::value(const GgufValue& v, const std::string& what) {
  switch (v.type) {
    case GgufType::U8: return put<uint8_t>(uint8_t(v.u));
    case GgufType::I8: return put<int8_t>(int8_t(v.i));
    case GgufType::U16: return put<uint16_t>(uint16_t(v.u));
    case GgufType::I16: return put<int16_t>(int16_t(v.i));
    case GgufType::U32: return put<uint32_t>(uint32_t(v.u));
    case GgufType::I32: return put<int32_t>(int32_t(v.i));
    case GgufType::U64: return put<uint64_t>(v.u);
    case GgufType::I64: return put<int64_t>(v.i);
    case GgufType::F32: return put<float>(float(v.f));
    case GgufType::F64: return put<double>(v.f);
    case GgufType::BOOL: return put<uint8_t>(v.b ? 1 : 0);
    case GgufType::STRING: return str(v.s);
    case GgufType::ARRAY:
      put<uint32_t>(uint32_t(v.elem));
      put<uint64_t>(v.items.size());
      for (size_t k = 0; k < v.items.size(); ++k) {
        MOE_CHECK(v.items[k].type == v.elem, "gguf: " << what << "[" << k << "] is " << gguf_type_name(v.items[k].type)
                                                      << ", the array holds " << gguf_type_name(v.elem));
        value(v.items[k], what + "[" + std::to_string(k) + "]");
      }
      return;
  }
  MOE_FAIL("gguf: " << what << ": unknown value type " << uint32_t(v.type));
}

// The alignment the metadata asks for (a u32 power of two), else GGUF's default 32.
uint64_t alignment_of(const std::vector<std::pair<std::string, GgufValue>>& metadata, const std::string& path) {
  for (const auto& [key, v] : metadata)
    if (key == "general.alignment") {
      MOE_CHECK(v.type == GgufType::U32 && v.u != 0 && (v.u & (v.u - 1)) == 0,
                "gguf: writing " << path << ": 'general.alignment' must be a u32 power of two, found " << v.summary());
      return v.u;
    }
  return 32;
}

// The tensors' sizes, checked against their types and shapes.
std::vector<uint64_t> checked_sizes(const std::vector<GgufTensorOut>& tensors, const std::string& path) {
  std::vector<uint64_t> sizes;
  std::set<std::string> names;
  for (const GgufTensorOut& t : tensors) {
    const std::string what = "gguf: writing " + path + ": tensor '" + t.name + "'";
    MOE_CHECK(names.insert(t.name).second, what << " appears twice");
    const GgmlType* type = ggml_type(t.type);
    MOE_CHECK(type, what << ": ggml type " << t.type << " is unknown");
    MOE_CHECK(!t.ne.empty() && t.ne.size() <= 4, what << ": " << t.ne.size() << " dimensions, expected 1..4");
    uint64_t n = 1;
    for (int64_t d : t.ne) {
      MOE_CHECK(d >= 0 && (d == 0 || n <= uint64_t(INT64_MAX) / uint64_t(d)), what << ": a dimension of " << d
                                                                                 << " (the element count passes int64)");
      n *= uint64_t(d);
    }
    MOE_CHECK(t.ne[0] % type->block == 0,
              what << ": ne[0] = " << t.ne[0] << " is not a multiple of " << type->name << "'s block of " << type->block);
    MOE_CHECK(n / uint64_t(type->block) <= UINT64_MAX / type->block_bytes, what << ": its size passes 64 bits");
    const uint64_t bytes = n / uint64_t(type->block) * type->block_bytes;
    MOE_CHECK(t.bytes.size() == bytes, what << ": " << t.bytes.size() << " bytes given, " << type->name << " "
                                            << "of this shape takes " << bytes);
    sizes.push_back(bytes);
  }
  return sizes;
}

}  // namespace

void write_gguf(const std::string& path, const std::vector<std::pair<std::string, GgufValue>>& metadata,
                const std::vector<GgufTensorOut>& tensors) {
  const uint64_t alignment = alignment_of(metadata, path);
  const std::vector<uint64_t> sizes = checked_sizes(tensors, path);
  std::set<std::string> keys;
  Out o;
  o.bytes = "GGUF";
  o.put<uint32_t>(3);
  o.put<uint64_t>(tensors.size());
  o.put<uint64_t>(metadata.size());
  for (const auto& [key, v] : metadata) {
    MOE_CHECK(keys.insert(key).second, "gguf: writing " << path << ": metadata '" << key << "' appears twice");
    o.str(key);
    o.put<uint32_t>(uint32_t(v.type));
    o.value(v, "writing " + path + ": metadata '" + key + "'");
  }
  uint64_t offset = 0;
  for (size_t k = 0; k < tensors.size(); ++k) {
    const GgufTensorOut& t = tensors[k];
    o.str(t.name);
    o.put<uint32_t>(uint32_t(t.ne.size()));
    for (int64_t d : t.ne) o.put<uint64_t>(uint64_t(d));
    o.put<uint32_t>(t.type);
    o.put<uint64_t>(offset);
    offset += (sizes[k] + alignment - 1) / alignment * alignment;
  }
  o.pad_to(alignment);
  for (const GgufTensorOut& t : tensors) {
    o.bytes.append(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
    o.pad_to(alignment);
  }
  write_file_atomic(path, "the GGUF file", std::string_view(o.bytes));
}

}  // namespace moe
