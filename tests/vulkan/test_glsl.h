// Test shaders in GLSL, compiled at test time by the manifest layer's shaderc path (Vulkan 1.2
// rules, as a manifest's "glsl" kernel without "glsl_target").
#pragma once
#include <cstdint>
#include <vector>

#include "compare/manifest/manifest.h"

namespace moe::test {

inline std::vector<uint32_t> glsl(const char* name, const char* source) {
  compare::KernelEntry k;
  k.glsl_target = "vulkan1.2";
  return compare::compile_glsl(source, name, k);
}

}  // namespace moe::test
