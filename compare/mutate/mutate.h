// `moeoracle mutate`: how strong is the gate on a kernel set? Every GLSL kernel of a manifest
// gets single-site mutants (mutants.h); each is compiled, those whose optimized SPIR-V equals the
// original's or an earlier mutant's are dropped (equivalent by construction), and the rest run
// the compare suite of the kernel's ops — each in a forked child process, so a mutant that
// crashes the driver or hangs is one result, not the end of the run. A mutant is killed when any
// case fails (the first failing case names the criterion), survives when every case passes, and
// times out when it hangs. Equivalence claims (a mutant that cannot change any output, argued in
// one line) come from a JSON file and are not counted as kills.
//
// The parent never opens a Vulkan device (it builds the cases, once per op, and compiles the
// mutants); each child opens its own, so nothing of a crashed driver survives into the next.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compare/mutate/mutants.h"
#include "compare/report/report.h"

namespace moe::compare {

struct MutateOptions {
  std::string kernels;           // manifest; "" or "bundled": the bundled kernels' GLSL sources
  std::string kernels_root;      // the engine checkout of a manifest with "sources": "kernels_root"
  std::string ops;               // only kernels of these ops (comma-separated); "" = all
  std::string only_kernels;      // only these kernels (comma-separated); "" = all with GLSL
  std::string rules;             // only these rules (comma-separated); "" = all
  std::string shapes = "all";
  uint64_t seed = 1;
  int seeds = 2;
  std::string device;
  uint32_t subgroup = 0;
  uint64_t timeout_ms = 20000;
  size_t max_per_kernel = 0;     // sample at most this many mutants per kernel (0: all)
  uint64_t sample_seed = 1;
  // Only these mutants: a file of lines "<kernel> <mutant id>" (e.g. the survivors of an earlier
  // run, to re-check them after a case or a bound changed). "" = every mutant.
  std::string mutants;
  // Claims files, JSON [{"kernel", "mutant" (Mutant::id), "why"}], or folders of them.
  std::vector<std::string> equivalent;
  // "I/N": this run is shard I of N: it compiles every mutant (so equal SPIR-V is dropped as in
  // one run) but runs, and reports, only the mutants whose index in the run's order is I mod N,
  // with no claims applied; `rescore` with the N reports puts them back together. "" = all.
  std::string shard;
  // JSON reports of earlier runs: nothing runs; their results are scored again with `equivalent`
  // (the claims they were scored with before are dropped), e.g. claims written after a long run.
  // Several: the N shards of one run (`shard`), merged into that run's report first.
  std::vector<std::string> rescore;
  // Mutating the bundled kernels: also apply the claims about them built into the binary.
  bool bundled_claims = true;
  int jobs = 1;                  // mutants run at once
  std::string json, html;
  double min_kill_rate = 0;      // mutate_command exits 1 when the overall kill rate is below it, or a unit had no case
  bool quiet = false;
};

// NotRun: the run was interrupted (SIGINT, SIGTERM) before the mutant's child finished, or no case
// of the selected shapes runs a kernel the mutant changes (a whole unit: MutateReport::no_cases).
enum class MutantStatus { Killed, Survived, TimedOut, Equivalent, Identical, Duplicate, NotCompiled, NotRun };
const char* mutant_status_name(MutantStatus s);

struct MutantResult {
  std::string kernel;
  Mutant mutant;
  MutantStatus status = MutantStatus::Survived;
  std::string criterion;  // Killed/TimedOut: unwritten, nan_inf, element, cosine, norm_ratio, max_abs_rel,
                          // index_set, guard, view, bounds (an out-of-range index or shift, or a data
                          // race: the runner's access checks), input_changed, crash, timeout, pipeline, error
  std::string evidence;   // the first failing case: its line and first reason; or why it was dropped
  std::string why;        // Equivalent: the claim's argument
  int cases = 0;          // cases run (a killed mutant stops at its first failure)
  double max_budget = 0;  // survivors: the largest share of an error bound any output used
  // Survivors: the smallest and largest subgroup size its cases ran at; killed: the killing
  // case's (0: unknown). Conditional equivalence claims apply only inside their range.
  uint32_t min_subgroup = 0, max_subgroup = 0;
};

struct MutateReport {
  std::vector<MutantResult> mutants;
  std::vector<std::string> no_source;  // kernels without GLSL (SPIR-V only): not mutated
  std::vector<std::string> wrong_claims;  // equivalence claims whose mutant was killed or not found
  std::vector<std::string> not_found;     // --mutants lines no selected kernel generated
  std::vector<std::string> no_cases;      // units no case of the selected shapes runs: not judged
  std::vector<std::string> baseline_fails;  // "unit: why": units whose unmutated kernels fail: not judged
  int64_t baseline_cases = 0;          // cases the unmutated kernels passed
  std::map<std::string, int64_t> baseline_units;  // the same per unit
  bool interrupted = false;            // stopped by SIGINT/SIGTERM: the report holds what finished
  bool bundled = false;                // the bundled kernels were mutated (their built-in claims apply)
  std::string shard;                   // "I/N" of a shard's report, "" for a whole run
};

// Per kernel (and "all"): counts by status and the kill rate killed / (run - equivalent), run =
// killed + survived + timed out + equivalent; timed-out mutants count as killed (a hang fails the gate).
struct KillStats {
  int64_t generated = 0, identical = 0, duplicate = 0, not_compiled = 0, killed = 0, survived = 0, timed_out = 0,
          equivalent = 0, not_run = 0;
  double kill_rate() const;  // 1 where none was judged
  int64_t judged() const { return killed + timed_out + survived; }
};
std::map<std::string, KillStats> kill_stats(const MutateReport& r, bool by_rule = false);

// Runs the whole thing. Throws moe::Error (exit 2) on bad input. A unit whose unmutated kernels
// fail a case (every kill would then be meaningless) is not judged (baseline_fails, exit 1); the
// other units are.
MutateReport run_mutate(const MutateOptions& opt);

// Console: a table per kernel (generated, dropped, killed by criterion, survived, timed out,
// equivalent, kill rate), every survivor with its diff, the claims that did not hold, the total.
void write_mutate_console(std::ostream& os, const MutateReport& r);
void write_mutate_json(std::ostream& os, const MutateReport& r);
// Reads a report write_mutate_json wrote (`path` names it in errors): every mutant with its
// status, evidence and subgroup range; the summary counts are recomputed, not read.
MutateReport read_mutate_json(const std::string& path);
// The reports of the N shards of one run (`mutate --shard I/N`, any order) as that run's report,
// mutants in the run's order. Throws moe::Error naming the files when they are not the N
// different shards of one run.
MutateReport merge_mutate_shards(const std::vector<std::string>& paths);
// One self-contained page: kill rate per kernel and per rule, survivors with diffs.
void write_mutate_html(std::ostream& os, const MutateReport& r);

// The CLI command: runs, prints, writes --json/--html; 1 when the overall kill rate is below
// opt.min_kill_rate, a unit's baseline fails or the run was interrupted, else 0.
int mutate_command(const MutateOptions& opt);

}  // namespace moe::compare
