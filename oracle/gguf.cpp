// Reading GGUF files (the layout: oracle/gguf.h).
#include "oracle/gguf.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <fstream>
#include <type_traits>
#include <sstream>

#include "core/check.h"

namespace moe {
namespace {

static_assert(std::endian::native == std::endian::little, "GGUF is read by copying little-endian bytes");

// Nesting deeper than this is refused (ggml writes arrays of scalars or strings only).
constexpr int kMaxDepth = 4;

// A bounds-checked little-endian reader over the mapped file; every failure names the file, the
// entry being read and the byte offset.
struct Cursor {
  const std::string& path;
  const uint8_t* data;
  uint64_t size, pos = 0;

  [[noreturn]] void fail(const std::string& what, const std::string& why) const {
    MOE_FAIL("gguf: " << path << ": " << what << " at byte " << pos << ": " << why);
  }
  void need(uint64_t n, const std::string& what) const {
    if (n > size - pos)
      fail(what, "needs " + std::to_string(n) + " bytes, the file has " + std::to_string(size - pos) +
                     " left (truncated or a corrupt count)");
  }
  template <class T>
  T get(const std::string& what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, data + pos, sizeof(T));
    pos += sizeof(T);
    return v;
  }
  std::string str(const std::string& what) {
    const uint64_t n = get<uint64_t>(what + " (its length)");
    need(n, what);
    std::string s(reinterpret_cast<const char*>(data + pos), size_t(n));
    pos += n;
    return s;
  }
  GgufValue value(GgufType t, const std::string& what, int depth);
};

// The smallest encoding of one element of type t (to bound an array's count by the bytes left).
uint64_t min_bytes(GgufType t) {
  switch (t) {
    case GgufType::U8: case GgufType::I8: case GgufType::BOOL: return 1;
    case GgufType::U16: case GgufType::I16: return 2;
    case GgufType::U32: case GgufType::I32: case GgufType::F32: return 4;
    case GgufType::STRING: case GgufType::U64: case GgufType::I64: case GgufType::F64: return 8;
    case GgufType::ARRAY: return 12;
  }
  return 1;
}

bool known_type(uint32_t t) { return t <= uint32_t(GgufType::F64); }

template <class T>
GgufValue integer(GgufType t, T v) {
  GgufValue out{.type = t};
  if constexpr (std::is_signed_v<T>) {
    out.i = int64_t(v), out.u = v < 0 ? 0 : uint64_t(v);
  } else {
    out.u = uint64_t(v), out.i = v <= uint64_t(INT64_MAX) ? int64_t(v) : -1;
  }
  return out;
}

GgufValue Cursor::value(GgufType t, const std::string& what, int depth) {
  switch (t) {
    case GgufType::U8: return integer(t, get<uint8_t>(what));
    case GgufType::I8: return integer(t, get<int8_t>(what));
    case GgufType::U16: return integer(t, get<uint16_t>(what));
    case GgufType::I16: return integer(t, get<int16_t>(what));
    case GgufType::U32: return integer(t, get<uint32_t>(what));
    case GgufType::I32: return integer(t, get<int32_t>(what));
    case GgufType::U64: return integer(t, get<uint64_t>(what));
    case GgufType::I64: return integer(t, get<int64_t>(what));
    case GgufType::F32: return GgufValue{.type = t, .f = get<float>(what)};
    case GgufType::F64: return GgufValue{.type = t, .f = get<double>(what)};
    case GgufType::BOOL: {
      const uint8_t b = get<uint8_t>(what);
      if (b > 1) fail(what, "a bool must be 0 or 1, found " + std::to_string(b));
      return GgufValue{.type = t, .b = b == 1};
    }
    case GgufType::STRING: return GgufValue{.type = t, .s = str(what)};
    case GgufType::ARRAY: {
      if (depth >= kMaxDepth) fail(what, "arrays nested deeper than " + std::to_string(kMaxDepth));
      const uint32_t et = get<uint32_t>(what + " (its element type)");
      if (!known_type(et)) fail(what, "unknown array element type " + std::to_string(et) + " (expected 0..12)");
      const uint64_t n = get<uint64_t>(what + " (its count)");
      if (n > (size - pos) / min_bytes(GgufType(et)))
        fail(what, "an array of " + std::to_string(n) + " elements cannot fit in the " +
                       std::to_string(size - pos) + " bytes left");
      GgufValue out{.type = t, .elem = GgufType(et)};
      out.items.reserve(size_t(n));
      for (uint64_t k = 0; k < n; ++k)
        out.items.push_back(value(GgufType(et), what + "[" + std::to_string(k) + "]", depth + 1));
      return out;
    }
  }
  fail(what, "unknown value type " + std::to_string(uint32_t(t)) + " (expected 0..12)");
}

// ne[0] * ... * ne[n-1] elements of `type` in bytes; false when an element count taken in
// dimension order passes int64 (GgufTensor::numel) or the bytes pass 64 bits.
bool tensor_bytes(const GgmlType& type, const std::vector<int64_t>& ne, uint64_t& bytes) {
  uint64_t n = 1;
  for (int64_t d : ne) {
    if (d != 0 && n > uint64_t(INT64_MAX) / uint64_t(d)) return false;
    n *= uint64_t(d);
  }
  const uint64_t blocks = n / uint64_t(type.block);
  if (blocks > UINT64_MAX / type.block_bytes) return false;
  bytes = blocks * type.block_bytes;
  return true;
}

}  // namespace

int64_t GgufTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : ne) n *= d;
  return n;
}

std::string GgufTensor::shape_string() const {
  std::ostringstream o;
  o << "[";
  for (size_t d = 0; d < ne.size(); ++d) o << (d ? ", " : "") << ne[d];
  o << "]";
  return o.str();
}

GgufFile::GgufFile(const std::string& path) : map_(path) { parse(); }

void GgufFile::parse() {
  Cursor c{map_.path(), map_.data(), map_.size()};
  if (c.size < 4 || std::memcmp(c.data, "GGUF", 4) != 0)
    MOE_FAIL("gguf: " << c.path << ": not a GGUF file (expected the magic \"GGUF\" in its first 4 bytes)");
  c.pos = 4;
  version_ = c.get<uint32_t>("the version");
  if (version_ == 1) c.fail("the version", "GGUF version 1 (32-bit counts, 2023) is not supported; convert the file with a current llama.cpp");
  if ((version_ & 0xFFFFu) == 0 && (version_ >> 24 == 2 || version_ >> 24 == 3))
    c.fail("the version", "a big-endian GGUF file; only little-endian files are supported");
  if (version_ != 2 && version_ != 3) c.fail("the version", "version " + std::to_string(version_) + ", expected 2 or 3");
  const uint64_t n_tensors = c.get<uint64_t>("the tensor count");
  const uint64_t n_kv = c.get<uint64_t>("the metadata count");
  // Each entry takes at least a key length, a type and one byte; each tensor info at least 28.
  if (n_kv > (c.size - c.pos) / 13) c.fail("the metadata count", std::to_string(n_kv) + " entries cannot fit in the file");
  if (n_tensors > (c.size - c.pos) / 28) c.fail("the tensor count", std::to_string(n_tensors) + " tensor infos cannot fit in the file");
  for (uint64_t k = 0; k < n_kv; ++k) {
    const std::string what = "metadata entry " + std::to_string(k);
    std::string key = c.str(what + "'s key");
    const uint32_t t = c.get<uint32_t>("metadata '" + key + "' (its type)");
    if (!known_type(t)) c.fail("metadata '" + key + "'", "unknown value type " + std::to_string(t) + " (expected 0..12)");
    GgufValue v = c.value(GgufType(t), "metadata '" + key + "'", 0);
    if (!kv_index_.emplace(key, kv_.size()).second) c.fail("metadata '" + key + "'", "the key appears twice");
    kv_.emplace_back(std::move(key), std::move(v));
  }
  if (const GgufValue* a = find_value("general.alignment")) {
    if (a->type != GgufType::U32 || a->u == 0 || (a->u & (a->u - 1)) != 0)
      MOE_FAIL("gguf: " << c.path << ": metadata 'general.alignment' must be a u32 power of two, found "
                        << a->summary());
    alignment_ = a->u;
  }
  for (uint64_t k = 0; k < n_tensors; ++k) {
    GgufTensor t;
    t.name = c.str("tensor info " + std::to_string(k) + "'s name");
    const std::string what = "tensor '" + t.name + "'";
    const uint32_t nd = c.get<uint32_t>(what + " (its n_dims)");
    if (nd < 1 || nd > 4) c.fail(what, "n_dims " + std::to_string(nd) + ", expected 1..4");
    for (uint32_t d = 0; d < nd; ++d) {
      const uint64_t n = c.get<uint64_t>(what + " (ne[" + std::to_string(d) + "])");
      if (n > uint64_t(INT64_MAX)) c.fail(what, "ne[" + std::to_string(d) + "] = " + std::to_string(n) + " is negative as int64");
      t.ne.push_back(int64_t(n));
    }
    const uint32_t type = c.get<uint32_t>(what + " (its type)");
    t.type = ggml_type(type);
    if (!t.type) c.fail(what, "ggml type " + std::to_string(type) + " is unknown or no longer supported by ggml");
    t.offset = c.get<uint64_t>(what + " (its offset)");
    if (!tensor_index_.emplace(t.name, tensors_.size()).second) c.fail(what, "the name appears twice");
    tensors_.push_back(std::move(t));
  }
  place_tensors(c.pos);
}

// Checks every tensor's shape, type, offset and extent against the data section, and points it
// into the map.
void GgufFile::place_tensors(uint64_t infos_end) {
  const std::string& path = map_.path();
  data_start_ = (infos_end + alignment_ - 1) / alignment_ * alignment_;
  MOE_CHECK(data_start_ <= map_.size() || tensors_.empty(),
            "gguf: " << path << ": the data section would start at byte " << data_start_ << ", past the file's end ("
                     << map_.size() << " bytes)");
  const uint64_t data_size = map_.size() > data_start_ ? map_.size() - data_start_ : 0;
  std::vector<std::pair<uint64_t, size_t>> extents;  // (offset, index)
  for (size_t k = 0; k < tensors_.size(); ++k) {
    GgufTensor& t = tensors_[k];
    const std::string what = "gguf: " + path + ": tensor '" + t.name + "' (" + t.type->name + " " + t.shape_string() + ")";
    MOE_CHECK(t.ne[0] % t.type->block == 0,
              what << ": ne[0] = " << t.ne[0] << " is not a multiple of the type's block of " << t.type->block);
    uint64_t bytes = 0;
    MOE_CHECK(tensor_bytes(*t.type, t.ne, bytes), what << ": its size overflows 64 bits");
    MOE_CHECK(t.offset % alignment_ == 0, what << ": offset " << t.offset << " is not a multiple of the alignment " << alignment_);
    MOE_CHECK(t.offset <= data_size && bytes <= data_size - t.offset,
              what << ": bytes [" << t.offset << ", " << t.offset << " + " << bytes << ") of the data section, which has "
                   << data_size << " (truncated file or corrupt offset)");
    t.data = map_.data() + data_start_ + t.offset;
    t.bytes = size_t(bytes);
    extents.emplace_back(t.offset, k);
  }
  std::sort(extents.begin(), extents.end());
  for (size_t k = 1; k < extents.size(); ++k) {
    const GgufTensor& a = tensors_[extents[k - 1].second];
    const GgufTensor& b = tensors_[extents[k].second];
    MOE_CHECK(a.offset + a.bytes <= b.offset, "gguf: " << path << ": tensors '" << a.name << "' and '" << b.name
                                                       << "' overlap in the data section (bytes from " << a.offset
                                                       << " and " << b.offset << ")");
  }
}

const GgufValue* GgufFile::find_value(const std::string& key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

const GgufTensor* GgufFile::find_tensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

uint64_t GgufFile::get_uint(const std::string& key) const {
  const GgufValue* v = find_value(key);
  MOE_CHECK(v, "gguf: " << path() << ": metadata '" << key << "' is missing");
  const bool integer = v->type <= GgufType::I32 || v->type == GgufType::U64 || v->type == GgufType::I64;
  MOE_CHECK(integer && (v->i >= 0 || v->type == GgufType::U64),
            "gguf: " << path() << ": metadata '" << key << "': expected a non-negative integer, found " << v->summary());
  return v->u;
}

double GgufFile::get_float(const std::string& key) const {
  const GgufValue* v = find_value(key);
  MOE_CHECK(v, "gguf: " << path() << ": metadata '" << key << "' is missing");
  MOE_CHECK(v->type == GgufType::F32 || v->type == GgufType::F64,
            "gguf: " << path() << ": metadata '" << key << "': expected f32 or f64, found " << v->summary());
  return v->f;
}

const std::string& GgufFile::get_string(const std::string& key) const {
  const GgufValue* v = find_value(key);
  MOE_CHECK(v, "gguf: " << path() << ": metadata '" << key << "' is missing");
  MOE_CHECK(v->type == GgufType::STRING,
            "gguf: " << path() << ": metadata '" << key << "': expected a string, found " << v->summary());
  return v->s;
}

bool is_gguf_file(const std::string& path) {
  char magic[4] = {};
  std::ifstream in(path, std::ios::binary);
  return in.read(magic, 4) && std::memcmp(magic, "GGUF", 4) == 0;
}

}  // namespace moe
