// GGUF files, llama.cpp's model format (the container only; the block formats' arithmetic is
// kernels_cpu's). Layout, all little-endian:
//   "GGUF" | u32 version (2 or 3) | u64 tensor count | u64 metadata count
//   metadata: key (u64 length + UTF-8 bytes) | u32 value type | value
//     value types: 0 u8, 1 i8, 2 u16, 3 i16, 4 u32, 5 i32, 6 f32, 7 bool (one byte, 0 or 1),
//     8 string (u64 length + bytes), 9 array (u32 element type, u64 count, elements; arrays nest),
//     10 u64, 11 i64, 12 f64
//   tensor infos: name (string) | u32 n_dims (1..4) | u64 ne[n_dims] (ne[0] the innermost, fastest
//     varying dimension) | u32 ggml type | u64 offset (from the data section's start)
//   padding to `general.alignment` (a u32 power of two; 32 when absent), then the data section,
//   each tensor at an offset that is a multiple of the alignment.
// Version 1 (u32 counts) and big-endian files are refused with a message saying so. Reading maps
// the file and validates every count, length, type, shape and offset against the file before any
// use; a bad file is an moe::Error naming the file, the entry, what was expected and what was found.
#pragma once
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "oracle/mapped_file.h"

namespace moe {

// A ggml tensor type as GGUF stores it (ggml's enum ggml_type). `block` elements take
// `block_bytes` bytes; ne[0] must be a multiple of `block`.
struct GgmlType {
  uint32_t id;
  const char* name;  // ggml's name: "f32", "q4_0", "q4_K", ...
  int64_t block;
  size_t block_bytes;
};
// nullptr when `id` is no type a GGUF file may hold (unknown, or removed from ggml).
const GgmlType* ggml_type(uint32_t id);
const GgmlType* ggml_type_named(const std::string& name);  // nullptr when unknown

enum class GgufType : uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, BOOL = 7,
  STRING = 8, ARRAY = 9, U64 = 10, I64 = 11, F64 = 12,
};
const char* gguf_type_name(GgufType t);

// One metadata value. Integers (any width, signed or not) in `i`/`u`, floats in `f`, bools in `b`,
// strings in `s`; an array's elements in `items`, all of type `elem`.
struct GgufValue {
  GgufType type = GgufType::U32;
  GgufType elem = GgufType::U8;  // arrays only
  uint64_t u = 0;
  int64_t i = 0;
  double f = 0;
  bool b = false;
  std::string s{};
  std::vector<GgufValue> items{};

  static GgufValue of_u32(uint32_t v);
  static GgufValue of_u64(uint64_t v);
  static GgufValue of_i32(int32_t v);
  static GgufValue of_f32(float v);
  static GgufValue of_bool(bool v);
  static GgufValue of_string(std::string v);
  static GgufValue array_of(GgufType elem, std::vector<GgufValue> items);
  // One line for listings: `u32 4096`, `string "qwen3moe"`, `array<string>[151936] "!", "\"", ...`.
  std::string summary(size_t max_items = 4) const;
};

struct GgufTensor {
  std::string name;
  const GgmlType* type = nullptr;
  std::vector<int64_t> ne;  // ne[0] innermost
  uint64_t offset = 0;      // from the data section's start
  const uint8_t* data = nullptr;
  size_t bytes = 0;

  int64_t numel() const;
  std::string shape_string() const;  // ggml's order: "[2048, 151936]" for ne = {2048, 151936}
};

class GgufFile {
 public:
  explicit GgufFile(const std::string& path);  // throws moe::Error, naming the path and the entry
  const std::string& path() const { return map_.path(); }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_start() const { return data_start_; }  // the data section's byte offset in the file

  // In file order.
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return kv_; }
  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  const GgufValue* find_value(const std::string& key) const;  // nullptr when absent
  const GgufTensor* find_tensor(const std::string& name) const;

  // Typed metadata: an error naming the file and key when absent or of another type (any integer
  // type that holds the value is accepted for the integer getters).
  uint64_t get_uint(const std::string& key) const;
  double get_float(const std::string& key) const;
  const std::string& get_string(const std::string& key) const;

 private:
  void parse();
  void place_tensors(uint64_t infos_end);

  MappedFile map_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32, data_start_ = 0;
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::map<std::string, size_t> kv_index_;
  std::vector<GgufTensor> tensors_;
  std::map<std::string, size_t> tensor_index_;
};

// Whether the file at `path` starts with GGUF's magic (false when unreadable).
bool is_gguf_file(const std::string& path);

// A tensor to write: `bytes` must be the exact size its type and shape take.
struct GgufTensorOut {
  std::string name;
  uint32_t type = 0;  // a ggml type id
  std::vector<int64_t> ne;
  std::span<const uint8_t> bytes;
};

// Writes a version-3 GGUF atomically (oracle/atomic_file.h): the metadata in the given order, the
// tensors in the given order, each aligned to `general.alignment` when the metadata sets it (a u32
// power of two), else 32. Checks names, shapes, types and sizes first; nothing is written on error.
void write_gguf(const std::string& path, const std::vector<std::pair<std::string, GgufValue>>& metadata,
                const std::vector<GgufTensorOut>& tensors);

}  // namespace moe
