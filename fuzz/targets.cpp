#include "fuzz/targets.h"

#include "core/check.h"

namespace moe::fuzz {

std::span<const TargetInfo> targets() {
#if MOE_FUZZ_FILES_ONLY  // the quick set (fuzz/CMakeLists.txt): the formats of targets_files.cpp
  static const TargetInfo all[] = {
      {"safetensors", safetensors, nullptr}, {"tap_map", tap_map, nullptr},
      {"dump_diff", dump_diff, nullptr},     {"tokens", tokens, nullptr},
      {"gguf", gguf, nullptr},
  };
#else
  static const TargetInfo all[] = {
      {"safetensors", safetensors, nullptr},    {"mlx_model", mlx_model, prepare_models},
      {"moeflux", moeflux, prepare_models},     {"snapshot", snapshot, prepare_models},
      {"manifest", manifest, prepare_manifests}, {"expr", expr, nullptr},
      {"case_file", case_file, nullptr},        {"tap_map", tap_map, nullptr},
      {"dump_diff", dump_diff, nullptr},        {"tokens", tokens, nullptr},
      {"gguf", gguf, nullptr},                  {"gguf_model", gguf_model, prepare_models},
  };
#endif
  return all;
}

const TargetInfo& find_target(const std::string& format) {
  std::string known;
  for (const TargetInfo& t : targets()) {
    if (format == t.format) return t;
    known += (known.empty() ? "" : ", ") + std::string(t.format);
  }
  MOE_FAIL("fuzz: no target '" << format << "' (known: " << known << ")");
}

void prepare(const std::string& format) {
  const TargetInfo& t = find_target(format);
  if (t.prepare) t.prepare();
}

}  // namespace moe::fuzz
