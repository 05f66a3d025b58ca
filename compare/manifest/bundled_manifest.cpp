#include "compare/manifest/bundled_manifest.h"

#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "compare/shaders/bundled.h"

namespace moe::compare {
namespace {

constexpr const char* kRoot = "/<bundled>/";

// Every embedded file by its path under kRoot, and the manifest as "bundled.json": the SPIR-V
// entries as built, or each "spirv" entry turned into the "glsl" source it was built from.
std::shared_ptr<const SourceFiles> bundled_tree(bool glsl) {
  std::map<std::string, std::string> files;
  for (const auto& [name, bytes] : bundled_files()) files[kRoot + name] = std::string(bytes.begin(), bytes.end());
  std::string manifest = bundled_manifest_json();
  if (glsl) {
    nlohmann::json m = nlohmann::json::parse(manifest);
    for (nlohmann::json& k : m["kernels"]) {
      const std::string spv = k["spirv"].get<std::string>();
      k.erase("spirv");
      k["glsl"] = spv.substr(0, spv.size() - 4) + ".comp";
    }
    manifest = m.dump(1);
  }
  files[std::string(kRoot) + "bundled.json"] = std::move(manifest);
  return std::make_shared<const SourceFiles>(std::move(files));
}

}  // namespace

Manifest load_bundled_manifest(bool glsl, const std::set<std::string>* only) {
  Manifest m = load_manifest(std::string(kRoot) + "bundled.json", only, bundled_tree(glsl));
  m.path = "";
  return m;
}

}  // namespace moe::compare
