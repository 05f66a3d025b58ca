// How a comparison decides (design.md "How a comparison decides"), for one output tensor of one
// case. Every default threshold carries its rationale next to it in metrics.cpp and in
// docs/compare-thresholds.md.
//
// Contract of decide():
//   truth  the f64 reference (ref<double>), one value per element;
//   found  the kernel's f32 output, read back after the dispatch;
//   poison the 32-bit pattern the output buffer was filled with before the dispatch.
// It checks, in this order, and records every criterion that fails (Verdict::failed):
//   1. unwritten: an element whose bits still equal the poison pattern was never written;
//   2. specials: NaN in found fails unless the truth is NaN there (and a NaN truth must be
//      matched by a NaN); an infinity must match in sign (kinds Reduction / Elementwise also
//      accept it where the truth overflows f32, as the Vulkan precision rules allow);
//   3. by kind: Reduction — |found - truth| <= bound per element, then cosine, norm ratio and
//      max|err| / max|truth| against thresholds derived from those bounds; Elementwise — ULP
//      error against the per-element budget; Exact — bit equality (-0 vs +0 fails).
// Bad input (sizes that differ, a negative or NaN bound) throws moe::Error naming the output.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace moe::compare {

enum class Kind {
  Reduction,    // error / floating-point bound + cosine + norm ratio + max abs / max |ref|
  Elementwise,  // ULP distance against the exact (f64) value, per-element budget
  Exact,        // data movement: bit-exact
  Indices,      // routing: set equality per row, differing sets only on near-ties
};
const char* kind_name(Kind k);

struct OutputSpec {
  std::string name;
  Kind kind = Kind::Reduction;
  // Reduction: per-element error bound in the kernel's declared accumulation precision, e.g.
  // gamma_n(n, u_acc) * sum|terms| computed with the f64 truth (worst case). One value per
  // element, or a single value for all. Finite and >= 0; 0 demands equality.
  std::vector<double> bound;
  // Elementwise: ULP budget per element (or one for all), in Vulkan's ULP of the exact result
  // (see vk_ulp below: exp 3 + 2|x|, inversesqrt 2, division 2.5, correctly rounded 1).
  std::vector<double> ulp_budget;
  // Indices: the row length K (indices per row), and optionally the f64 scores the selection
  // ranks (rows x E) with the kernel's possible error on each (empty, one value, or rows x E):
  // passed to decide_indices for the near-tie rule.
  int64_t row = 0;
  std::vector<double> scores, score_bound;
  // Routing weights: the name of the index output they belong to (same [rows, row] layout, row
  // set here too). The driver then also checks each found (expert, weight) pair against the
  // truth's weight of that expert (compare/run/run_case.cpp check_pairing).
  std::string paired_with;
};

// The criteria, as bits of Verdict::failed.
enum Check : uint32_t {
  kUnwritten = 1u << 0,  // elements still holding the poison pattern
  kSpecial = 1u << 1,    // NaN / Inf mismatches
  kElement = 1u << 2,    // an element beyond its bound / ULP budget / not bit-equal
  kCosine = 1u << 3,     // Reduction: cosine below the threshold implied by the bounds
  kNormRatio = 1u << 4,  // Reduction: |found| / |truth| outside the implied interval
  kMaxAbs = 1u << 5,     // Reduction: max|err| / max|truth| above the implied limit
  kIndexSet = 1u << 6,   // Indices: a row's set differs and is not a near-tie alternative
};

struct Verdict {
  std::string output;  // OutputSpec::name
  Kind kind = Kind::Reduction;
  bool pass = false;
  bool warn = false;       // passed, but with budget_used >= kWarnBudget (style rule 8)
  uint32_t failed = 0;     // bit set of Check
  std::string reason;      // one human line: the first failing criterion, its evidence, the others
  int64_t worst_index = -1;  // element (Indices: row) of the evidence
  // The values there. Indices: the witness experts of the first failing row when scores were
  // given (expected: the truth's expert that cannot be displaced; found: the one that tried).
  double expected = 0, found = 0;
  double bound = 0;          // Reduction: bound there; Elementwise: ULP budget there
  double budget_used = 0;    // worst |err| / bound (or ULP / budget), 1.0 = at the limit
  int64_t compared = 0;      // elements (Indices: rows) looked at
  int64_t over_budget = 0;   // elements (rows) beyond their bound / budget / not equal
  // Reduction aggregates and the thresholds they were held to (derived from the bounds).
  double cosine = 1, cosine_min = -1;
  double norm_ratio = 1, norm_ratio_tol = 0;  // pass: |norm_ratio - 1| <= norm_ratio_tol
  double max_abs_rel = 0, max_abs_rel_limit = 0;
  double max_ulp = 0;        // Elementwise: worst ULP error
  int64_t nan_found = 0;     // NaN in found where the truth is not NaN
  int64_t nan_missing = 0;   // the truth is NaN, found is not
  int64_t inf_mismatch = 0;  // an infinity on either side not matched as the rules demand
  int64_t unwritten = 0;     // poisoned outputs never written
  int64_t near_ties = 0;     // Indices: rows accepted as a near-tie alternative
};

// A passing output that used at least this fraction of its budget is flagged (Verdict::warn):
// the kernel is correct by the bound but close enough that a different seed or device may not
// be; reports say so instead of printing a plain PASS.
inline constexpr double kWarnBudget = 0.9;

// The default poison: a quiet NaN with a recognisable payload (0x7FC00BAD). A kernel cannot
// produce these bits except by copying them, and no case feeds them as input.
inline constexpr uint32_t kPoison = 0x7FC00BADu;

Verdict decide(const OutputSpec& spec, std::span<const double> truth, std::span<const float> found,
               uint32_t poison_bits = kPoison);

// Exact comparison of raw 32-bit words (u32 / i32 outputs, packed bf16 pairs, quantised blocks):
// every word equal; a word still equal to the poison counts as unwritten.
Verdict decide_bits(const OutputSpec& spec, std::span<const uint32_t> truth, std::span<const uint32_t> found,
                    uint32_t poison_bits = kPoison);

// Routing indices, spec.row = K per row, R = truth.size() / K rows. Order inside a row does not
// matter; a row passes when the found set equals the truth's set (as multisets, so a truth row of
// K x -1, "no expert" for a NaN token, needs the same). A differing set passes only as a near-tie:
// scores (R x E, the f64 values the selection ranks, largest chosen) and score_bound (the
// kernel's possible error on each score: empty = 0, one value, or R x E) must show that the
// found set F is the top-K of some scores within the bounds:
//     min over i in F of (s_i + b_i)  >=  max over j not in F of (s_j - b_j),
// i.e. only elements whose scores can swap places with the truth's within the error moved.
// F must also hold K distinct experts in [0, E). Without scores, sets must be equal. Exact ties
// are no excuse: F may not hold an expert whose (finite) score equals exactly that of a
// lower-indexed expert left out, since every engine gives ties to the lowest index and a kernel
// computes equal scores for equal inputs.
// Group-limited routing (router_noaux): pass the scores the final top-K ranks, with experts of
// unselected groups at -inf; a group-level near-tie is then reported as a failure (conservative).
// A found value equal to the poison (as int32) counts as unwritten.
Verdict decide_indices(const OutputSpec& spec, std::span<const int32_t> truth, std::span<const int32_t> found,
                       std::span<const double> scores = {}, std::span<const double> score_bound = {},
                       uint32_t poison_bits = kPoison);

// Vulkan's ulp(x) for f32 (spec "Precision and Operation of SPIR-V Instructions", ULP): the
// smallest gap between two distinct finite floats a <= x <= b; at a power of two that is the gap
// below it; past FLT_MAX the last gap (2^104). NaN for a NaN or infinite x.
double ulp_f32(double x);
// |found - truth| / ulp_f32(truth): the error in Vulkan's ULP of the exact result (fractional:
// division is allowed 2.5). +inf when found is NaN/Inf or the truth is.
double ulp_error(float found, double truth);
// Ordered distance in representable floats between `a` and float(truth) (the correctly rounded
// truth): 0 for equal values (and for -0 vs +0), counting through zero across signs; +inf if
// either is NaN.
double ulp_distance(float a, double truth);

// ULP budgets of the Vulkan precision table (spirvenv.adoc, "Precision of GLSL.std.450
// Instructions"; fp32 without RelaxedPrecision), for building OutputSpec::ulp_budget.
namespace vk_ulp {
// OpFAdd/OpFSub/OpFMul, conversions, fmin/fmax/floor...: "correctly rounded", which in Vulkan
// means either neighbour of the exact value (unless RoundingModeRTE), so |err| < 1 ULP.
inline constexpr double kCorrectlyRounded = 1.0;
inline constexpr double kDivision = 2.5;     // OpFDiv, for |y| in [2^-126, 2^126]
inline constexpr double kInverseSqrt = 2.0;  // inversesqrt
// exp, exp2: 3 + 2|x| ULP.
inline double exp(double x) { return 3.0 + 2.0 * (x < 0 ? -x : x); }
// log, log2: 3 ULP outside [0.5, 2]; inside, absolute error < 2^-21, as ULP of the result.
double log(double x, double result);
// sin, cos: absolute error <= 2^-11 on [-pi, pi] as ULP of the result. Outside [-pi, pi] the
// spec promises nothing, so this throws moe::Error: a kernel taking sin/cos of large angles
// (RoPE at long positions) must reduce the range itself, and its case must bound that.
double sincos(double x, double result);
// An absolute error bound expressed in ULP of the result.
inline double from_abs(double abs_err, double result) { return abs_err / ulp_f32(result); }
}  // namespace vk_ulp

}  // namespace moe::compare
