// Every fuzzer finding, fixed, stays fixed: each input under tests/fuzz_regressions/<format>/
// (and each seed of fuzz/corpus/<format>/) goes through its fuzz target (fuzz/targets.h) the way
// the libFuzzer harness feeds it, here in the normal build: it must load, or fail with a
// moe::Error; another exception fails the test, a crash ends it. docs/fuzzing.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/check.h"
#include "fuzz/targets.h"

namespace moe::fuzz {
namespace {
namespace fs = std::filesystem;

std::vector<fs::path> files_under(const fs::path& dir) {
  std::vector<fs::path> out;
  if (fs::is_directory(dir))
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file() && e.path().filename().string()[0] != '.') out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// The input's outcome: "" (loaded) or the moe::Error message.
std::string feed(Target target, const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream os;
  os << f.rdbuf();
  const std::string bytes = os.str();
  std::fprintf(stderr, "%s\n", p.string().c_str());  // names the input should it crash
  try {
    target(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

class FuzzInputs : public testing::TestWithParam<std::string> {};

TEST_P(FuzzInputs, RegressionsFailCleanly) {
  const Target target = find_target(GetParam()).run;
  for (const fs::path& p : files_under(fs::path(MOE_SOURCE_DIR) / "tests/fuzz_regressions" / GetParam())) {
    SCOPED_TRACE(p.string());
    const std::string outcome = feed(target, p);
    std::fprintf(stderr, "  -> %s\n", outcome.empty() ? "loaded" : outcome.c_str());
  }
}

TEST_P(FuzzInputs, SeedsLoadOrFailCleanly) {
  const Target target = find_target(GetParam()).run;
  const std::vector<fs::path> seeds = files_under(fs::path(MOE_SOURCE_DIR) / "fuzz/corpus" / GetParam());
  EXPECT_FALSE(seeds.empty());
  for (const fs::path& p : seeds) {
    SCOPED_TRACE(p.string());
    feed(target, p);
  }
}

std::vector<std::string> formats() {
  std::vector<std::string> out;
  for (const TargetInfo& t : targets()) out.push_back(t.format);
  return out;
}

INSTANTIATE_TEST_SUITE_P(formats, FuzzInputs, testing::ValuesIn(formats()),
                         [](const testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace
}  // namespace moe::fuzz
