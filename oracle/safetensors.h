// safetensors files: an 8-byte little-endian header length, a JSON header
// {name: {dtype, shape, data_offsets: [begin, end)}, "__metadata__": {str: str}}, then the data.
// Reading maps the file and validates every entry against the file size before use; writing is
// atomic (oracle/atomic_file.h): the file at the path is the old one or the whole new one.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "oracle/mapped_file.h"

namespace moe {

enum class DType { F32, F64, F16, BF16, U8, I8, U16, I16, U32, I32, U64, I64, BOOL };

const char* dtype_name(DType d);
size_t dtype_size(DType d);

// The size in bytes of a tensor of `shape` with `elem_size`-byte elements; false when a
// dimension is negative or the product does not fit 64 bits (a corrupt header's 2^62 x 8).
bool shape_bytes(const std::vector<int64_t>& shape, size_t elem_size, uint64_t& bytes);

struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;  // into the mapped file
  size_t bytes = 0;
  std::string file;  // the file it lives in (for messages)

  int64_t numel() const;
  std::string shape_string() const;  // "[2048, 512]"
};

class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path);  // throws moe::Error naming the path and entry
  const std::string& path() const { return map_.path(); }
  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const TensorInfo* find(const std::string& name) const;
  // The names in file order (ascending data offset).
  std::vector<std::string> names_in_file_order() const;

 private:
  MappedFile map_;
  std::map<std::string, TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

struct TensorOut {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const void* data = nullptr;  // dtype_size * numel bytes
};

// `what` names the content in error messages ("the dump", "the case file").
void write_safetensors(const std::string& path, const std::vector<TensorOut>& tensors,
                       const std::map<std::string, std::string>& metadata,
                       const std::string& what = "the safetensors file");

}  // namespace moe
