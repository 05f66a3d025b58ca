// Compiling a kernel's GLSL (manifest.h compile_glsl, glsl_includes): shaderc with the entry's
// target and defines, #includes read from the entry's source tree.
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <shaderc/shaderc.hpp>

#include "compare/manifest/manifest.h"
#include "compare/manifest/spirv_cache.h"
#include "core/check.h"

namespace moe::compare {
namespace fs = std::filesystem;

namespace {

// #include "x" relative to the including file (then the root source's folder for <x>), read from
// the kernel's source tree.
// `seen` (optional) collects every file it opened.
class FileIncluder : public shaderc::CompileOptions::IncluderInterface {
 public:
  FileIncluder(fs::path root_dir, std::shared_ptr<const SourceFiles> files, std::set<std::string>* seen = nullptr)
      : root_(std::move(root_dir)), files_(std::move(files)), seen_(seen) {}
  shaderc_include_result* GetInclude(const char* requested, shaderc_include_type type, const char* requesting,
                                     size_t) override {
    auto* r = new Result;
    fs::path base = type == shaderc_include_type_relative ? fs::path(requesting).parent_path() : root_;
    fs::path p = (base / requested).lexically_normal();
    std::optional<std::string> text;
    try {
      text = files_->find(p.string(), "include");
    } catch (const Error&) {  // not a regular file: no include either
    }
    if (text) {
      if (seen_) seen_->insert(p.string());
      r->name = p.string();
      r->content = std::move(*text);
    } else {
      r->content = "cannot open include '" + p.string() + "'";  // shaderc's convention: empty name = failure
    }
    r->res = {r->name.c_str(), r->name.size(), r->content.c_str(), r->content.size(), r};
    return &r->res;
  }
  void ReleaseInclude(shaderc_include_result* data) override { delete static_cast<Result*>(data->user_data); }

 private:
  struct Result {
    std::string name, content;
    shaderc_include_result res{};
  };
  fs::path root_;
  std::shared_ptr<const SourceFiles> files_;
  std::set<std::string>* seen_;
};

shaderc::CompileOptions compile_options(const KernelEntry& k, bool optimize) {
  shaderc::CompileOptions opt;
  opt.SetTargetEnvironment(shaderc_target_env_vulkan,
                           k.glsl_target == "vulkan1.3" ? shaderc_env_version_vulkan_1_3 : shaderc_env_version_vulkan_1_2);
  // No optimization: spirv-opt strips the names push constants are matched by, and the driver
  // optimizes anyway; the module stays the kernel as written.
  opt.SetOptimizationLevel(optimize ? shaderc_optimization_level_performance : shaderc_optimization_level_zero);
  for (const auto& [name, value] : k.defines) opt.AddMacroDefinition(name, value);
  return opt;
}

}  // namespace

std::vector<uint32_t> read_spirv(const std::string& path, const SourceFiles& files) {
  std::string bytes = files.read(path, "spirv");
  MOE_CHECK(!bytes.empty(), "'" << path << "': empty file, expected SPIR-V");
  MOE_CHECK(bytes.size() % 4 == 0, "'" << path << "': " << bytes.size()
                                       << " bytes, expected a multiple of 4 (SPIR-V is 32-bit words; truncated?)");
  // The header is 5 words (magic, version, generator, bound, schema).
  MOE_CHECK(bytes.size() >= 20, "'" << path << "': " << bytes.size() << " bytes, expected at least the 20-byte SPIR-V header");
  std::vector<uint32_t> words(bytes.size() / 4);
  std::memcpy(words.data(), bytes.data(), bytes.size());
  constexpr uint32_t kMagic = 0x07230203u;
  if (words[0] != kMagic) {
    std::ostringstream os;
    os << std::hex << "0x" << words[0];
    MOE_CHECK(words[0] != 0x03022307u, "'" << path << "': SPIR-V magic is byte-swapped (" << os.str()
                                            << "); expected a little-endian module with magic 0x07230203");
    MOE_FAIL("'" << path << "': not SPIR-V: first word " << os.str() << ", expected magic 0x07230203");
  }
  return words;
}

std::vector<uint32_t> compile_glsl(const std::string& source, const std::string& path, const KernelEntry& k,
                                   bool optimize, bool cached) {
  shaderc::Compiler compiler;
  MOE_CHECK(compiler.IsValid(), "'" << path << "': shaderc compiler could not be created");
  shaderc::CompileOptions opt = compile_options(k, optimize);
  opt.SetIncluder(std::make_unique<FileIncluder>(fs::path(path).parent_path(), k.files));
  // GLSL's entry is always main(); k.entry names the SPIR-V entry point, so a GLSL kernel
  // declaring another entry is caught by reflection ("no entry point ...").
  std::string key;
  if (cached) {  // the key from the preprocessed text: includes and defines applied
    const auto pre = compiler.PreprocessGlsl(source, shaderc_compute_shader, path.c_str(), opt);
    if (pre.GetCompilationStatus() == shaderc_compilation_status_success) {
      key = spirv_cache_key(k.glsl_target + (optimize ? " O\n" : " O0\n") + std::string(pre.cbegin(), pre.cend()));
      if (auto hit = spirv_cache_get(key)) return std::move(*hit);
    }
  }
  auto res = compiler.CompileGlslToSpv(source, shaderc_compute_shader, path.c_str(), opt);
  MOE_CHECK(res.GetCompilationStatus() == shaderc_compilation_status_success,
            "'" << path << "': GLSL compile failed (" << k.glsl_target << "):\n" << res.GetErrorMessage());
  std::vector<uint32_t> words(res.cbegin(), res.cend());
  if (!key.empty()) spirv_cache_put(key, words);
  return words;
}


std::set<std::string> glsl_includes(const std::string& source, const std::string& path, const KernelEntry& k) {
  shaderc::Compiler compiler;
  MOE_CHECK(compiler.IsValid(), "'" << path << "': shaderc compiler could not be created");
  std::set<std::string> seen;
  shaderc::CompileOptions opt = compile_options(k, false);
  opt.SetIncluder(std::make_unique<FileIncluder>(fs::path(path).parent_path(), k.files, &seen));
  const auto pre = compiler.PreprocessGlsl(source, shaderc_compute_shader, path.c_str(), opt);
  MOE_CHECK(pre.GetCompilationStatus() == shaderc_compilation_status_success,
            "'" << path << "': GLSL preprocessing failed:\n" << pre.GetErrorMessage());
  return seen;
}

}  // namespace moe::compare
