#include "compare/manifest/source_files.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/check.h"

namespace moe::compare {
namespace fs = std::filesystem;

SourceFiles::SourceFiles(std::shared_ptr<const SourceFiles> base, const std::string& path, std::string text)
    : base_(std::move(base)) {
  files_[fs::path(path).lexically_normal().string()] = std::move(text);
}

std::optional<std::string> SourceFiles::find(const std::string& path, const std::string& what) const {
  if (base_) {
    const auto it = files_.find(fs::path(path).lexically_normal().string());
    return it != files_.end() ? std::optional<std::string>(it->second) : base_->find(path, what);
  }
  if (in_memory_) {
    const auto it = files_.find(fs::path(path).lexically_normal().string());
    if (it == files_.end()) return std::nullopt;
    return it->second;
  }
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) return std::nullopt;
  MOE_CHECK(fs::is_regular_file(st), what << ": '" << path << "' is not a regular file");
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  std::ostringstream os;
  os << f.rdbuf();
  return os.str();
}

std::string SourceFiles::read(const std::string& path, const std::string& what) const {
  std::optional<std::string> bytes = find(path, what);
  MOE_CHECK(bytes, what << ": cannot open '" << path << "'");
  return std::move(*bytes);
}

const std::shared_ptr<const SourceFiles>& file_system() {
  static const std::shared_ptr<const SourceFiles> fs = std::make_shared<const SourceFiles>();
  return fs;
}

}  // namespace moe::compare
