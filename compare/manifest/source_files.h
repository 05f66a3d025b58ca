// Where a manifest and its kernels' files are read from: the file system, or a tree held in memory
// (the bundled kernels, embedded in the binary, served under the root "/<bundled>" without
// touching the disk). A loaded kernel keeps its tree, so compiling its source again (mutate)
// resolves its #includes the same way.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace moe::compare {

class SourceFiles {
 public:
  SourceFiles() = default;  // the file system
  // An in-memory tree: absolute, lexically normal path -> bytes.
  explicit SourceFiles(std::map<std::string, std::string> files)
      : files_(std::move(files)), in_memory_(true) {}
  // `base` with the file at `path` (absolute) replaced by `text`: a mutant of an #included file.
  SourceFiles(std::shared_ptr<const SourceFiles> base, const std::string& path, std::string text);

  // The bytes of `path`, or nullopt where there is no such file. A path that names something
  // other than a regular file (a device never ends, a FIFO blocks, a directory is no source)
  // throws moe::Error naming `what` and the path.
  std::optional<std::string> find(const std::string& path, const std::string& what) const;
  // The bytes of `path`; throws moe::Error "<what>: cannot open '<path>'" where there is none.
  std::string read(const std::string& path, const std::string& what) const;
  bool in_memory() const { return base_ ? base_->in_memory() : in_memory_; }

 private:
  std::map<std::string, std::string> files_;  // in memory; or, over a base, the one replaced file
  bool in_memory_ = false;
  std::shared_ptr<const SourceFiles> base_;
};

// The file system (a shared, stateless SourceFiles).
const std::shared_ptr<const SourceFiles>& file_system();

}  // namespace moe::compare
