// The file formats that need no model (targets.h): safetensors and GGUF files, `diff --map` files, dumps
// and their diff, token files. Built on support_io.h alone: the quick fuzz set
// (fuzz/CMakeLists.txt) compiles these with the few oracle sources they read, nothing more.
#include <cmath>
#include <cstdio>
#include <cstring>

#include "core/check.h"
#include "fuzz/support_io.h"
#include "fuzz/targets.h"
#include "oracle/dump_diff.h"
#include "core/ggml_blocks.h"
#include "oracle/gguf.h"
#include "oracle/safetensors.h"
#include "oracle/tap_map.h"
#include "oracle/tokens.h"

namespace moe::fuzz {
namespace fs = std::filesystem;

namespace {

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

void safetensors(const uint8_t* data, size_t size) {
  const SafetensorsFile f(write_input("input.safetensors", as_text(data, size)).string());
  read_all(f);
}

void gguf(const uint8_t* data, size_t size) {
  const GgufFile f(write_input("input.gguf", as_text(data, size)).string());
  size_t chars = 0;
  for (const auto& [key, v] : f.metadata()) chars += key.size() + v.summary().size();
  uint64_t sum = chars;
  for (const GgufTensor& t : f.tensors()) {
    for (size_t k = 0; k < t.bytes; ++k) sum += t.data[k];  // every byte the reader claims is in the file
    if (ggml_dequant_supported(t.type->id)) {  // and every value, as `inspect` decodes them
      std::vector<double> v(size_t(t.numel()));
      ggml_dequant_f64(t.type->id, {t.data, t.bytes}, t.numel(), v.data());
      for (double x : v) sum += uint64_t(std::isfinite(x));
    }
  }
  volatile uint64_t sink = sum;
  (void)sink;
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
