// Reports of a compare run: one CaseResult per (op, kernel, shape, seed, subgroup size) and three
// writers over a list of them — a console table for people, JSON (--json) for tools, JUnit XML
// (--junit) for CI dashboards — plus the summary line "N passed, N failed, N skipped".
// Contract: every failing case prints its evidence (the worst element, expected, found, % of the
// budget, from Verdict::reason) and a one-line command that reproduces it alone. Writers only
// format; they never decide: a case's status comes from CaseResult::status().
#pragma once
#include <cstdint>
#include <ostream>
#include <span>
#include <map>
#include <string>
#include <vector>

#include "compare/decide/metrics.h"

namespace moe::compare {

struct CaseResult {
  std::string op;        // the op (or fused sequence, "rmsnorm+matvec_bf16")
  std::string kernel;    // the manifest's kernel name
  std::string manifest;  // the manifest file; "" for the bundled kernels
  std::string params;    // params_to_string(p), for people
  std::string shape;     // the shape label the CLI's --shapes selects ("A3B hidden", "remainder 33")
  uint64_t seed = 0;
  uint32_t subgroup = 0;  // the subgroup size the pipeline was pinned to; 0: the driver's choice ("sg=driver")
  std::vector<Verdict> outputs;  // one per compared output (and state), in the kernel's order
  bool skipped = false;
  std::string skip_reason;  // e.g. the manifest limit that excludes the case, "dim <= 8192 (dim = 16384)"
  // Non-empty: the case failed before or beside the numbers (a guard region overwritten, the
  // dispatch timed out, the pipeline failed to build). Such a case fails whatever its outputs say.
  std::string error;
  // Device time of the dispatches, from timestamps; < 0: not measured. With --perf, for a
  // one-step case, the median of its cold runs (vk::Repeat), and `timing` the rest.
  double gpu_ms = -1;
  struct Timing {
    int runs = 0;  // cold runs (and as many warm ones); 0: not timed so
    double cold_lo = -1, cold_hi = -1;          // fastest and slowest cold run
    double warm = -1, warm_lo = -1, warm_hi = -1;  // median, fastest and slowest warm run
    // The stream figure (compare/run/perf.h): per copy of the sequence, run back to back over
    // stream_copies copies of its inputs; stream_cold when they span the cold flush. -1: not taken.
    double stream = -1, stream_lo = -1, stream_hi = -1;
    int stream_copies = 0;
    bool stream_cold = false;
  } timing;
  double bytes = 0;    // bytes the op must move at least (for GB/s)
  double flops = 0;    // floating-point operations (for GFLOP/s)
  // A buffer was not device-local (--perf): gpu_ms includes reads over PCIe.
  bool system_memory = false;
  std::string case_file;  // set when the case was replayed from a case file (--case)
  // Where the case sits in the run (to order and merge results of isolated workers): its seed's
  // position in the op's case list, and the plan's position among the op's plans.
  int64_t case_pos = -1;
  int plan_index = 0;
  // The dispatch itself failed (timeout, device lost): the device may be unusable for the next
  // case, so an isolated worker reports this case and hands over to a fresh one.
  bool device_fault = false;
  // Non-empty: the case is under a declared difference of the kernel (docs/manifests.md "Declared
  // differences"): the `why` of each whose "when" holds.
  std::string difference;

  enum class Status { Pass, Fail, Skip, Differs };
  // Skip if skipped; Fail if error is set or nothing was compared (a case with no outputs cannot
  // pass); if an output failed, Differs under a declared difference, else Fail; else Pass.
  // Differs is counted apart and does not fail the run.
  Status status() const;
  bool warn() const;  // passed with an output at >= kWarnBudget of its budget
};

const char* status_name(CaseResult::Status s);  // "PASS", "FAIL", "SKIP", "DIFFERS"

struct Summary {
  int64_t passed = 0, failed = 0, skipped = 0, warned = 0;
  int64_t differ = 0;  // failed under a declared difference (DIFFERS)
  int64_t declared = 0;  // cases under a declared difference, whatever their status
};
Summary summarize(std::span<const CaseResult> cases);
// "12 passed, 1 failed, 3 skipped" (plus ", 2 near the budget" when any passed with a warning,
// and ", 4 differ as declared, 2 under a declared difference passed" when any case is under one).
std::string summary_line(const Summary& s);

// The command that reruns just this case (a replayed case: moeoracle compare --case FILE ...):
//   moeoracle compare --ops OP --seed S --shapes LABEL --subgroup N [--kernels MANIFEST]
// Arguments are single-quoted for a POSIX shell where they need it.
std::string repro_command(const CaseResult& c);

// One line per case ("PASS rmsnorm rmsnorm_f32 [A3B hidden] seed=7 sg=8 y 12% ..."); under a
// failing case its evidence lines, one per failing output (or the error), and the repro command;
// under a WARN case (passed at >= kWarnBudget) the near outputs' lines and the repro command;
// then the summary line. Skipped cases show their reason on their line.
void write_console(std::ostream& os, std::span<const CaseResult> cases);
std::string case_line(const CaseResult& c);

// --perf: per (op, kernel, shape), over the cases that were timed, the median GPU time, GB/s
// (bytes the case moves at least: its inputs read and outputs written, per step), GFLOP/s when
// the case states its flops, and GB/s as a percentage of `copy_gbs`, the device's copy
// bandwidth measured by the same process (0: not measured, no percentage).
// copy_gbs: the device's streaming copy bandwidth; fma_gflops: its f32 FMA peak; same_copy:
// per case byte count, the cold and stream times of a copy kernel moving as many bytes (empty:
// not measured). flush_read: the cold runs followed a read of the flush buffer (else a fill).
// Where cases have the stream figure (CaseResult::Timing::stream) a line gains "stream ...".
// The median of a non-empty list (the upper one of an even count), as --perf reports its figures.
double median_of(std::vector<double> v);

struct SameSizeCopy {
  double cold = 0, stream = 0;  // ms; 0: not measured
};
void write_perf(std::ostream& os, std::span<const CaseResult> cases, bool flush_read, double copy_gbs, double fma_gflops = 0,
                const std::map<double, SameSizeCopy>& same_copy = {});

// JSON: {"summary": {passed, failed, skipped, warned, differ, declared}, "cases": [{op, kernel,
// manifest, params, shape, seed, subgroup (0: the driver's choice), subgroup_pinned, status
// (PASS | FAIL | SKIP | DIFFERS), warn, skip_reason, difference, error, gpu_ms, timing (--perf: runs, cold_/warm_/stream_median_ms,
// _min_ms, _max_ms, stream_copies, stream_cold; null when not timed), bytes, flops, repro, outputs: [{name, kind, pass,
// warn, failed: [criteria], reason, worst_index, expected, found, bound, budget_used, cosine,
// cosine_min, norm_ratio, norm_ratio_tol, max_abs_rel, max_abs_rel_limit, max_ulp, compared,
// over_budget, nan_found, nan_missing, inf_mismatch, unwritten, near_ties}]}]}.
// Non-finite numbers (an infinite budget_used) are written as null, as JSON has no infinity.
void write_json(std::ostream& os, std::span<const CaseResult> cases);

// JUnit XML: <testsuites> with one <testsuite name=OP> per op (in first-seen order) and one
// <testcase classname="compare.OP" name="KERNEL [SHAPE] seed=S sg=N"> per case; a failing case
// holds <failure message="first reason">evidence lines and the repro command</failure>, a
// skipped one <skipped message="reason"/>, a pass near its budget <system-out> with the
// evidence. time= is the GPU time in seconds when measured.
// Text is escaped for XML (& < > " ') and characters XML 1.0 cannot hold are replaced by '?'.
void write_junit(std::ostream& os, std::span<const CaseResult> cases);
std::string xml_escape(const std::string& s);

// HTML (--html): one self-contained page (compare/report_html.cpp): per op and kernel counts and
// worst budget, histograms of error / bound, failures with evidence and repro commands, skips.
void write_html(std::ostream& os, std::span<const CaseResult> cases);

// Writes a report file; throws moe::Error naming the path when it cannot be written.
enum class ReportFormat { Json, Junit, Html };
void save_report(const std::string& path, ReportFormat format, std::span<const CaseResult> cases);

}  // namespace moe::compare
