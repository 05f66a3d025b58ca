// What every fuzz target shares, and nothing model-shaped: the rule that splits one input into
// several files, a scratch directory per process (on tmpfs where there is one), file helpers and
// the invariant check. The file-format targets (targets_files.cpp) need only this, so their
// harnesses build without the model code (the quick set: fuzz/CMakeLists.txt).
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace moe::fuzz {

// An input that stands for several files holds them one after the other, separated by this
// line: short enough for the mutator to make or break, rare in JSON. The dictionaries list it.
inline constexpr std::string_view kSplit = "\n@@\n";
std::vector<std::string_view> split_parts(const uint8_t* data, size_t size);
std::string_view as_text(const uint8_t* data, size_t size);

// A fresh directory for this process, removed at exit.
const std::filesystem::path& scratch();
void write_file(const std::filesystem::path& p, std::string_view bytes);
std::string read_file(const std::filesystem::path& p);

// A broken promise of the code under test (not a bad input): reported and aborted, so libFuzzer
// saves the input and the regression test fails.
[[noreturn]] void invariant_failed(const std::string& what);

}  // namespace moe::fuzz
