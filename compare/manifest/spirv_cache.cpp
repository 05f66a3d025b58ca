#include "compare/manifest/spirv_cache.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <span>

#include "core/check.h"
#include "oracle/atomic_file.h"

namespace moe::compare {
namespace fs = std::filesystem;

namespace {

constexpr uint32_t kMagic = 0x07230203;

// FNV-1a over 64 bits, twice with independent offsets: 128 bits, so that two different kernels
// sharing a key is not a practical concern (the key picks the SPIR-V a verdict is reached on).
uint64_t fnv1a(const std::string& s, uint64_t h) {
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// The cache folder, created on first use; "" when there is none.
const std::string& cache_dir() {
  static const std::string dir = [] {
    fs::path d;
    if (const char* e = std::getenv("MOE_SPIRV_CACHE")) {
      if (!*e || std::string(e) == "0") return std::string();
      d = e;
    } else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) {
      d = fs::path(x) / "moeoracle" / "spirv";
    } else if (const char* h = std::getenv("HOME"); h && *h) {
      d = fs::path(h) / ".cache" / "moeoracle" / "spirv";
    } else {
      return std::string();
    }
    std::error_code ec;
    fs::create_directories(d, ec);
    return ec || !fs::is_directory(d) ? std::string() : d.string();
  }();
  return dir;
}

}  // namespace

std::string spirv_cache_key(const std::string& text) {
  // The build of this library: another build may carry another glslang.
  const std::string build = __DATE__ " " __TIME__;
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016llx%016llx",
                static_cast<unsigned long long>(fnv1a(build + '\0' + text, 0xcbf29ce484222325ull)),
                static_cast<unsigned long long>(fnv1a(text + '\0' + build, 0x84222325cbf29ce4ull)));
  return buf;
}

std::optional<std::vector<uint32_t>> spirv_cache_get(const std::string& key) {
  if (cache_dir().empty()) return std::nullopt;
  std::ifstream f(fs::path(cache_dir()) / (key + ".spv"), std::ios::binary | std::ios::ate);
  if (!f) return std::nullopt;
  const std::streamoff bytes = f.tellg();
  if (bytes < 20 || bytes % 4 != 0) return std::nullopt;
  std::vector<uint32_t> words(size_t(bytes / 4));
  f.seekg(0);
  if (!f.read(reinterpret_cast<char*>(words.data()), bytes) || words[0] != kMagic) return std::nullopt;
  return words;
}

void spirv_cache_put(const std::string& key, const std::vector<uint32_t>& words) {
  if (cache_dir().empty() || words.empty()) return;
  try {  // whole or not at all, and a killed writer's temporary is removed by the next one
    write_file_atomic((fs::path(cache_dir()) / (key + ".spv")).string(), "a compiled kernel",
                      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(words.data()), words.size() * 4),
                      Durability::Scratch);
  } catch (const Error&) {  // a full disk or a read-only cache: compile next time, as without one
  }
}

}  // namespace moe::compare
