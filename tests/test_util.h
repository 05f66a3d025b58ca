// Helpers shared by the tests.
#pragma once
#include <gtest/gtest.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/check_util.h"
#include "core/simd.h"

namespace moe::test {

// The non-finite inputs of the ops' NaN/Inf tests.
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// The three tiers by their index in a test's tier table: 0 the f64 truth, 1 f32, 2 fast.
inline constexpr const char* kTierNames[] = {"truth", "ref32", "fast"};

// A router's output for n = tokens * K slots, pre-filled with -7 so a slot left unwritten shows.
struct RouterOut {
  std::vector<int32_t> idx;
  std::vector<float> w;
  explicit RouterOut(int64_t n) : idx(size_t(n), -7), w(size_t(n), -7.0f) {}
};

// A scratch directory under the system's temporary one, named by `tag` and the process id (tests
// run in parallel), empty at the start and removed at the end.
struct Scratch {
  std::filesystem::path dir;
  explicit Scratch(const std::string& tag) {
    dir = std::filesystem::temp_directory_path() / ("moeoracle_" + tag + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
  }
  ~Scratch() { std::filesystem::remove_all(dir); }
};

// Every case of an op's three-way check passes; a failure prints the evidence.
inline void expect_all_pass(const std::vector<CheckResult>& results) {
  ASSERT_FALSE(results.empty());
  for (const CheckResult& r : results) {
    EXPECT_TRUE(r.ref32.pass()) << describe(r, r.ref32);
    EXPECT_TRUE(r.fast.pass()) << describe(r, r.fast);
  }
}

// The message of the moe::Error `f` throws ("" and a test failure where it throws none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const moe::Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a moe::Error";
  return "";
}

// `f` throws moe::Error whose message contains `needle`.
template <class F>
void expect_error(F&& f, const std::string& needle) {
  try {
    f();
  } catch (const moe::Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << "message was: " << e.what();
    return;
  }
  ADD_FAILURE() << "expected moe::Error containing '" << needle << "'";
}

// Runs `f` with the fast tier pinned to each SIMD target this binary and CPU offer (scalar,
// SSE4, AVX2, AVX-512, ...), so every dispatched path is tested, not only the best; restores the
// best afterwards. Failures carry the target's name.
template <class F>
void each_simd_target(F&& f) {
  const std::vector<std::string> targets = simd_targets();
  ASSERT_FALSE(targets.empty());
  for (const std::string& t : targets) {
    SCOPED_TRACE("SIMD target " + t);
    simd_pin(t);
    ASSERT_EQ(simd_target(), t);
    f();
  }
  simd_pin("");
}

// Runs `run(y)` (y: n floats) on one OpenMP thread and on max(all, 3) and expects the same bits:
// an op that spreads rows over threads must not depend on how many there are. Restores the count.
template <class F>
void expect_thread_count_invariant(size_t n, F&& run) {
  const int saved = omp_get_max_threads();
  std::vector<float> y1(n), yn(n);
  omp_set_num_threads(1);
  run(y1);
  omp_set_num_threads(std::max(saved, 3));
  run(yn);
  omp_set_num_threads(saved);
  EXPECT_EQ(y1, yn);
}

}  // namespace moe::test
