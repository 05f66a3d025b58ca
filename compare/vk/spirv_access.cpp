// check_access (runner_internal.h): the Checker of spirv_access_checker.h run over one module.
#include "compare/vk/spirv_access_checker.h"

namespace moe::vk::detail {

AccessCheck check_access(std::span<const uint32_t> words, const std::string& label, const std::string& entry,
                         const AccessLimits& limits) {
  MOE_CHECK(words.size() >= 5 && words[0] == 0x07230203u,
            "vulkan: " << label << ": not SPIR-V (" << words.size() << " words)");
  return Checker(words, label, entry, limits).run();
}

}  // namespace moe::vk::detail
