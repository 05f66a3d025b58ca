// Kernels from elsewhere run isolated (design.md): each plan's cases run in a worker process,
// `<worker_exe> compare-worker <request>` (worker_main below: the request is one JSON argument that
// carries everything the parent already decided), which streams one JSON line per message to the
// parent on descriptor 3:
//   {"start": <the case, as a CaseResult without outputs>, "unit": U, "steps": S}  before a case
//   {"result": <CaseResult>}                                                         after it
//   {"error": "<message>"}   bad input (a manifest or case error that ends the whole run, exit 2)
//   {"done": true}           the plan's cases are done
// On a CPU driver (lavapipe) a kernel's shared memory, buffers and loops live in the process that
// runs it: a kernel writing its shared array out of bounds corrupts that process's heap. The
// parent therefore turns a worker that dies (a signal, an abort, an unexpected exit) or stops
// answering into a FAIL of the case it was running — the signal, its last lines on stderr, the
// reproduction line — and starts a new worker at the plan's next case. A worker whose dispatch
// timed out or lost the device reports that case and exits with kExitRestart (the device may be
// unusable); a new worker takes the next case. A plan the device cannot run as described
// (vk::PlanError: a workgroup past its limits, no such entry point) fails the case with the reason
// and the same worker goes on: nothing was submitted, so it is no death. After kMaxWorkerDeaths deaths or restarts of one
// plan, its remaining cases are one FAIL line, not run.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "compare/run/plan.h"

namespace moe::compare {

inline constexpr int kExitRestart = 3;

// compare_cases with every plan in a worker process: the parent's pool, which starts workers,
// reads their results, and turns a death or a hang into the FAIL of the case that caused it.
std::vector<CaseResult> compare_isolated(const CompareOptions& opt);
inline constexpr int kMaxWorkerDeaths = 3;

// What a worker runs: one plan of one op, from unit `resume` on.
struct WorkerTask {
  int fd = -1;                       // where to write the JSON lines
  std::string op;
  std::string plan;                  // the plan's label, to find it again
  size_t plan_index = 0;             // its position among the op's plans (for the report order)
  std::vector<std::string> kernels;  // the kernels the plan uses: only these are loaded
  int64_t resume = 0;
};

// The worker's side: runs the task with `opt` (kernels, seeds, shapes, device, shard, subgroup,
// perf, timeout) and returns its exit code (0 done, 2 bad input, kExitRestart after a device
// fault; the latter leaves at once through _exit, skipping the wait for a hung kernel).
int run_worker(const CompareOptions& opt, const WorkerTask& task);

// The first argument that makes an executable a worker. The worker protocol is compare's: an
// executable serving as `worker_exe` only hands `argv` to worker_main when argv[1] is this,
// before parsing any option of its own (cli/main.cpp).
inline constexpr const char* kWorkerCommand = "compare-worker";
// `<exe> compare-worker <request JSON>`: the request gives the options a worker needs, the task,
// and the parent's bound mode and transcendental budgets (measured once, in the parent). Sets
// both process-wide and runs the task; returns the exit code (2 on a malformed request, with the
// reason on stderr and as an {"error"} line).
int worker_main(int argc, char** argv);
// The request for `task` under `opt` (the parent's side of worker_main).
std::string worker_request(const CompareOptions& opt, const WorkerTask& task);

// The OpenMP thread count each of `jobs` concurrent workers gets: the cores shared out, at least
// one; 0 (leave it alone) for a single worker or when the user set OMP_NUM_THREADS (`user`
// non-null). Why: a worker builds its cases' f64 truth with OpenMP, and N workers each starting
// a thread per core spin against one another (records/benchmarks-history.md, "Why the seed records
// were slow"; records/device-runs.md, 2026-11-27 23:22).
int worker_omp_threads(int jobs, unsigned cores, const char* user);

}  // namespace moe::compare
