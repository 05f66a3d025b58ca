#include "fuzz/support_io.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace moe::fuzz {
namespace fs = std::filesystem;

std::vector<std::string_view> split_parts(const uint8_t* data, size_t size) {
  const std::string_view all = as_text(data, size);
  std::vector<std::string_view> parts;
  size_t at = 0;
  for (size_t p; (p = all.find(kSplit, at)) != std::string_view::npos; at = p + kSplit.size())
    parts.push_back(all.substr(at, p - at));
  parts.push_back(all.substr(at));
  return parts;
}

std::string_view as_text(const uint8_t* data, size_t size) {
  return size ? std::string_view(reinterpret_cast<const char*>(data), size) : std::string_view();
}

namespace {

// Removes the scratch directory at exit (a crash leaves it: its name carries the pid).
struct ScratchDir {
  fs::path path;
  ScratchDir() {
    const fs::path base = fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    path = base / ("moe_fuzz_" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

}  // namespace

const fs::path& scratch() {
  static ScratchDir dir;
  return dir.path;
}

void write_file(const fs::path& p, std::string_view bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), std::streamsize(bytes.size()));
  if (!f.good()) invariant_failed("fuzz support: cannot write " + p.string());
}

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) invariant_failed("fuzz support: cannot read " + p.string());
  std::ostringstream os;
  os << f.rdbuf();
  return os.str();
}

void invariant_failed(const std::string& what) {
  std::fprintf(stderr, "fuzz invariant failed: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace moe::fuzz
