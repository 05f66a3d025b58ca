// Compiled GLSL shared between processes: an isolated compare runs every plan in a fresh worker,
// and each would otherwise compile the same kernels again (an engine manifest's GLSL, the
// harness's own scrub and flush kernels). Entries are keyed by a 128-bit hash of everything that
// decides the SPIR-V: the preprocessed source (includes and defines applied), the target, the
// optimisation flag, and the build of this library (a rebuilt moeoracle never reads an older
// compiler's output). A file is written whole or not at all (oracle/atomic_file.h); an entry that
// is not a SPIR-V module is ignored and rewritten.
//
// Where: $MOE_SPIRV_CACHE if set (0 or an empty value turns the cache off), else
// $XDG_CACHE_HOME/moeoracle/spirv, else $HOME/.cache/moeoracle/spirv; no cache where none of
// these can be created. A cache failure is never an error: the kernel is compiled as without one.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace moe::compare {

// The key of `text` (what decides the SPIR-V, as one string): 32 hex digits.
std::string spirv_cache_key(const std::string& text);
std::optional<std::vector<uint32_t>> spirv_cache_get(const std::string& key);
void spirv_cache_put(const std::string& key, const std::vector<uint32_t>& words);

}  // namespace moe::compare
