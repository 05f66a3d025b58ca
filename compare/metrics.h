// How a comparison decides (design.md "How a comparison decides"), for one output tensor of one
// case. Every default threshold carries its rationale next to it in metrics.cpp and in docs/.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace moe::compare {

enum class Kind {
  Reduction,    // error / floating-point bound + cosine + norm ratio + max abs / max |ref|
  Elementwise,  // ULP distance against the correctly rounded truth, per-function budget
  Exact,        // data movement: bit-exact
  Indices,      // routing: set equality per row, near-ties allowed
};

struct OutputSpec {
  std::string name;
  Kind kind = Kind::Reduction;
  // Reduction: per-element error bound in the kernel's declared accumulation precision, e.g.
  // gamma_n(n, u_acc) * sum|terms| computed with the f64 truth (worst case), and the
  // probabilistic form sqrt(n) * u_acc * sqrt(sum terms^2) used for reporting.
  std::vector<double> bound;
  // Elementwise: ULP budget (e.g. Vulkan precision rules: exp 3 + 2|x| ULP).
  std::vector<double> ulp_budget;
  // Indices: row length and, per row, whether a near-tie makes either choice acceptable.
  int64_t row = 0;
};

struct Verdict {
  bool pass = false;
  std::string reason;     // first failing criterion, human-readable
  int64_t worst_index = -1;
  double expected = 0, found = 0;
  double budget_used = 0;  // worst |err| / bound (or ULP / budget), 1.0 = at the limit
  double cosine = 1, norm_ratio = 1, max_abs_rel = 0, max_ulp = 0;
  int64_t nan_found = 0, inf_mismatch = 0, unwritten = 0;  // poisoned outputs never written
};

// truth: f64 reference values; found: the kernel's output; poison: the pattern the output was
// filled with before dispatch (an element still equal to it counts as unwritten).
Verdict decide(const OutputSpec& spec, std::span<const double> truth, std::span<const float> found,
               uint32_t poison_bits = 0x7FC00BADu);
Verdict decide_indices(const OutputSpec& spec, std::span<const int32_t> truth, std::span<const int32_t> found,
                       std::span<const uint8_t> near_tie_rows);

// ULP distance between two floats (same-sign ordered distance; NaN or sign mismatch -> +inf).
double ulp_distance(float a, double truth);

}  // namespace moe::compare
