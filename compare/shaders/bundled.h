// The bundled kernel set: shaders/*.comp compiled by glslc at build time and embedded, with the
// manifest shaders/bundled.json describing them in the same format any engine's kernels use.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace moe::compare {

// "rmsnorm.spv" -> SPIR-V bytes, "rmsnorm.comp" -> its GLSL source
const std::map<std::string, std::vector<uint8_t>>& bundled_files();
std::string bundled_manifest_json();

}  // namespace moe::compare
