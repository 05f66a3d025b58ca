// The bundled kernel set as a manifest, served from memory: the embedded JSON, SPIR-V and GLSL
// (compare/shaders/bundled.h) under the root "/<bundled>", loaded through the same loader and
// reflection checks as any engine's manifest, with nothing written to disk.
#pragma once
#include <set>
#include <string>

#include "compare/manifest/manifest.h"

namespace moe::compare {

// `glsl`: the kernels as GLSL sources (compiled at load; mutate edits them) instead of the SPIR-V
// glslc built. `only` (optional): just the kernels of these names. The manifest's path is "".
Manifest load_bundled_manifest(bool glsl, const std::set<std::string>* only = nullptr);

}  // namespace moe::compare
