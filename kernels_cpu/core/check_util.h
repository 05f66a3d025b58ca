// Three-way agreement: the f32 tier (ref<float>) and the fast tier are each compared with the
// truth (ref<double>) element by element against a per-element error bound that the op
// derives from floating-point error analysis. Used by the op self-check table (`moeoracle
// selfcheck`) and by the tests, so both judge with the same bounds.
#pragma once
#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace moe {

// Unit roundoff of f32 (round to nearest): |fl(x) - x| <= u |x|.
inline constexpr double kU32 = 0x1.0p-24;
// Smallest normal f32; an absolute floor for bounds where results may underflow.
inline constexpr double kMinNormal32 = 0x1.0p-126;

// Higham's gamma_n = n u / (1 - n u): a sum or dot product of n terms in precision u, in any
// order, has |error| <= gamma_{n-1} * sum |terms| (gamma_n covers the product roundings too).
inline double gamma_n(double n, double u = kU32) { return n * u / (1.0 - n * u); }

struct TierReport {
  explicit TierReport(std::string name) : tier(std::move(name)) {}
  std::string tier;           // "ref32" or "fast"
  double worst_ratio = 0.0;   // max over elements of |found - expected| / bound (<= 1 passes)
  std::string worst_output;   // which output the worst element is in ("y", "state", ...)
  int64_t worst_index = -1;
  double expected = 0.0, found = 0.0, bound = 0.0;
  int64_t special_mismatch = 0;  // NaN where the truth has none (or vice versa), Inf of the wrong sign
  int64_t compared = 0;
  double seconds = 0.0;
  bool pass() const { return special_mismatch == 0 && worst_ratio <= 1.0 && compared > 0; }

  // Compare one output. bound[i] >= 0; a bound of 0 demands bit-equality (data movement).
  void add(const char* output, std::span<const float> expected_vals, std::span<const float> found_vals,
           std::span<const double> bound);
  // Same with one bound for every element.
  void add(const char* output, std::span<const float> expected_vals, std::span<const float> found_vals,
           double bound);
  // Integer outputs (indices): exact equality.
  void add_exact(const char* output, std::span<const int32_t> expected_vals, std::span<const int32_t> found_vals);
};

struct CheckResult {
  std::string op;
  std::string shape;   // a short label, e.g. "A3B in_proj_qkv" or "remainder 33"
  std::string params;  // params_to_string(p)
  uint64_t seed = 0;
  double truth_seconds = 0.0;
  TierReport ref32{"ref32"};
  TierReport fast{"fast"};
  bool pass() const { return ref32.pass() && fast.pass(); }
};

// Which shapes a check runs: remainder sizes (1, 31, 33, 67, 4099 ...), the real shapes of
// Qwen3.5-397B-A17B and Qwen3.6-35B-A3B (docs/ops/verification.md "Shapes to cover"), or both.
enum class CheckScope { Remainders, Real, All };
inline bool scope_has_remainders(CheckScope s) { return s != CheckScope::Real; }
inline bool scope_has_real(CheckScope s) { return s != CheckScope::Remainders; }

using CheckFn = std::vector<CheckResult> (*)(uint64_t seed, CheckScope scope);

// Wall-clock seconds of one call.
template <class F>
double time_call(F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// One line for a failing tier: where, expected, found, bound, % of budget.
std::string describe(const CheckResult& r, const TierReport& t);

}  // namespace moe
