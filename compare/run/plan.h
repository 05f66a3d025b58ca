// The plans of a comparison (the layer below the driver and the isolated workers): which kernels
// of a manifest run an op's cases (a plan), the manifest loaded and checked, the options of a
// run, the units of an op's cases (seed x case x plan x subgroup size) run in order, and the
// results merged in report order. driver.h runs them in this process or, through isolate.h, in
// workers; both build on this and never on each other's internals.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compare/cases/cases.h"
#include "compare/manifest/chains.h"
#include "compare/manifest/manifest.h"
#include "compare/report/report.h"

namespace moe::vk {
class Context;
struct Dispatch;
struct DeviceInfo;
}

namespace moe::compare {

// The bundled manifest ("" or "bundled") or a manifest file, loaded and checked against reflection.
// `only` (optional): just the kernels of these names (an isolated worker's plan).
Manifest load_kernels(const std::string& path, const std::string& kernels_root = "",
                      const std::set<std::string>* only = nullptr);

// What runs on an op's cases: one kernel (the op's own, or a fused kernel whose ops are a
// chain's stages), or a chain's stage kernels back to back.
struct Plan {
  std::string op;
  std::string label;                        // kernel name, or "a -> b -> c"
  std::vector<const KernelEntry*> kernels;  // into the Manifest: it must outlive the plan
  std::vector<const ChainStage*> stages;    // parallel to kernels; nullptr: names pass through
  std::vector<uint32_t> subgroup_sizes;     // sizes every kernel of the plan accepts (empty: any)
  // Chains: per stage every kernel of the manifest for it (e.g. matmul_q4 and matmul_q8); each
  // case runs, per stage, the first whose limits accept it. Empty for single-kernel plans.
  std::vector<std::vector<const KernelEntry*>> alternatives;
  // Every kernel (every alternative) leaves the subgroup size to the driver: the plan runs once,
  // unpinned ("sg=driver"). In a plan that also pins, such kernels run unpinned at each size.
  bool driver_subgroup = false;
};
// The conventions a plan's cases are built with (its kernels', compare/cases/conventions.h).
const Conventions& plan_conventions(const Plan& plan);
// Every plan of `m` for `op`, in manifest order (own kernels, fused kernels, then the chain).
// When there is none, `why_none` (if given) says what is missing.
std::vector<Plan> plans_for(const Manifest& m, const std::string& op, std::string* why_none);
// The subgroup sizes to run a plan at on this device (0 = the driver's own size: a plan whose
// kernels leave it to the driver, or a device that cannot pin sizes); `only` != 0 restricts to
// that size, except for a driver-sized plan, which runs once at 0 whatever `only` says.
// Empty: none in common.
std::vector<uint32_t> plan_subgroup_sizes(const Plan& plan, const vk::DeviceInfo& info, uint32_t only);
// Runs one case through a plan at one subgroup size (0: the driver's choice) and decides it:
// buffers by case tensor name kept across the case's steps; per step uploads, poison, the
// dispatch sequence, guard regions, untouched inputs, then the step's outputs.
// `downloads` (optional) receives the final contents of every case tensor the plan binds.
// `perf` (--perf): a one-step case's dispatches then run again as cold and warm batches
// (perf.h, time_repeats): gpu_ms is the cold median, CaseResult::timing the rest.
CaseResult run_plan_case(vk::Context& ctx, const Manifest& m, const Plan& plan, const OpCase& c, uint32_t subgroup,
                         uint64_t timeout_ms, std::map<std::string, std::vector<uint32_t>>* downloads = nullptr,
                         bool perf = false);

// Decides one output of a case from the words read back (`got`, the tensor's words) against
// its truth, by the output's kind and the tensor's type.
Verdict decide_output(const OutputSpec& spec, const HostTensor& t, const std::vector<double>& truth,
                      const std::vector<uint32_t>& got);


// From now on every block malloc'ed while a dispatch runs starts as bytes 0xFE instead of
// whatever was there (often zeros; vk::poison_dispatch_malloc). On a CPU driver a dispatch's
// shared memory is malloc'ed, so a kernel reading shared memory it never wrote computes with
// -1.7e38 and fails visibly.
void poison_fresh_memory();
// Malloc as it was (a host process that goes on after a run: the Python module).
void restore_fresh_memory();

struct CompareOptions {
  std::string kernels;        // manifest path; "" = the bundled kernels
  std::string kernels_root;   // the engine checkout of a manifest with "sources": "kernels_root"
  std::string ops;            // comma-separated; "" = every op the manifest has cases for
  uint64_t seed = 1;
  int seeds = 1;              // seeds seed .. seed + seeds - 1
  std::string shapes = "all"; // remainders | real | all, or one shape label
  std::string device;         // index or name substring; "" = first (discrete preferred)
  std::string shard;          // "I/N": seeds s % N == I when seeds >= N, else cases with index % N == I (also GTEST_SHARD_INDEX/TOTAL_SHARDS)
  uint32_t subgroup = 0;      // 0: every size; else only this one
  bool perf = false;          // print GB/s and GFLOP/s from GPU timestamps
  std::string json, junit, html;  // report files
  std::string results;        // every result losslessly, for `moeoracle merge` of shards (run/shards.h)
  uint64_t timeout_ms = 20000;
  bool quiet = false;         // no header line (tests)
  std::string case_file;      // --case: replay one saved case (compare/run/case_file.h) instead of generated cases
  // Run each plan's cases in a worker process (compare/run/isolate.h), so that a kernel that
  // crashes or hangs the driver fails alone and the run goes on. Needs `worker_exe`.
  bool isolate = false;
  std::string worker_exe;     // the moeoracle executable that serves `compare-worker` (isolate.h)
  int jobs = 1;               // workers at once
  std::string precision_note; // which transcendental budgets are in use: the header's second line
};

// One plan of an op with its position among the op's plans and the sizes it runs at.
struct PlanRun {
  size_t index = 0;
  const Plan* plan = nullptr;
  std::vector<uint32_t> sizes;
};

// A loaded manifest, the ops to compare, their plans, and the (op, plan) work items; plans the
// device cannot run at any size are already results (skipped).
struct CompareRun {
  Manifest manifest;
  std::vector<std::string> ops;
  std::map<std::string, std::vector<Plan>> plans;
  std::vector<std::pair<std::string, PlanRun>> work;  // plans point into `plans`: do not copy a CompareRun
  std::vector<CaseResult> unrunnable;
  CompareRun() = default;
  CompareRun(const CompareRun&) = delete;
  CompareRun(CompareRun&&) = default;
};
// Loads the manifest and works out ops and plans; throws moe::Error (exit 2) on bad input.
CompareRun prepare_run(const CompareOptions& opt, const vk::DeviceInfo& info);
void print_header(const CompareOptions& opt, const vk::DeviceInfo& info, const Manifest& m);

struct Shard {
  int64_t index = 0, count = 1;
};
Shard parse_shard(const CompareOptions& opt);  // --shard or GTEST_SHARD_INDEX/TOTAL_SHARDS
// "I/N" (0 <= I < N) as a Shard, "" as 0/1; `what` names the text in the error ("mutate: --shard").
Shard parse_shard_text(const std::string& text, const std::string& what);

// Callbacks of run_op_cases: before each (case, plan, subgroup size) unit (optional), and its result.
struct UnitHooks {
  // `proto`: the case's result as far as it is known before it runs (no outputs yet).
  std::function<void(int64_t unit, const CaseResult& proto, int steps)> start;
  std::function<void(CaseResult&&)> result;
};
// Runs the units of `op`: seeds in order (this shard's), each seed's cases in order (built once),
// each on every plan at every size; units numbered from 0 in that order, those below `resume`
// left out (a worker resuming after a crash).
void run_op_cases(vk::Context& ctx, const Manifest& m, const std::string& op, const std::vector<PlanRun>& plans,
                  const CompareOptions& opt, int64_t resume, const UnitHooks& hooks);
// Results in report order (ops as given, then seed, case, plan), a case no plan ran merged into
// one SKIP line with every plan's reason.
std::vector<CaseResult> merge_results(std::vector<CaseResult> rs, const std::vector<std::string>& ops);


}  // namespace moe::compare
