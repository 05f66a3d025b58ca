// Isolated workers (compare/run/isolate.h) on the default Vulkan device: a kernel that kills the
// process running it (a shared-memory write far out of bounds: on lavapipe that memory is the
// process's) fails the case it was running with the signal, and every other case of it and of
// the other kernels is still reported; a kernel too slow for the dispatch timeout fails that case
// and its next cases run on a fresh worker; a kernel that crashes on every case stops after
// kMaxWorkerDeaths deaths with one line for the rest; a device gone during the run fails the plans
// left, each with the reason, and the run still ends with its results.
#include "compare/run/isolate.h"
#include "compare_test_util.h"

namespace moe::compare {
namespace {

const std::string kIsolation = test::kData + "isolation/isolation.json";

std::vector<CaseResult> run_isolated(const std::string& ops, uint64_t timeout_ms) {
  CompareOptions o;
  o.kernels = kIsolation, o.ops = ops, o.shapes = "remainders", o.seeds = 1, o.quiet = true;
  o.isolate = true, o.worker_exe = MOE_CLI, o.timeout_ms = timeout_ms;
  return compare_cases(o);
}

// Under AddressSanitizer or ThreadSanitizer a worker's SIGSEGV is the sanitizer's to report: it
// exits with its own code (ASan 1, TSan 66) instead of dying by the signal.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

// Concurrent workers share the cores out (no device needed): 16 workers each starting 16 OpenMP
// threads made a seed's case building 150x slower on a 16-core machine.
TEST(isolation, ConcurrentWorkersShareTheCoresOut) {
  EXPECT_EQ(worker_omp_threads(16, 16, nullptr), 1);
  EXPECT_EQ(worker_omp_threads(4, 16, nullptr), 4);
  EXPECT_EQ(worker_omp_threads(3, 16, nullptr), 5);
  EXPECT_EQ(worker_omp_threads(8, 2, nullptr), 1);    // more workers than cores: one each
  EXPECT_EQ(worker_omp_threads(1, 16, nullptr), 0);   // one worker: OpenMP's own default
  EXPECT_EQ(worker_omp_threads(4, 16, "2"), 0);       // the user's setting wins
  EXPECT_EQ(worker_omp_threads(4, 16, ""), 4);        // an empty setting is no setting
}

TEST(isolation, ACrashFailsItsCaseAndTheRunGoesOn) {
  if (!test::have_device()) GTEST_SKIP() << "no Vulkan device";
  const std::vector<CaseResult> rs = run_isolated("residual_add", 3000);
  std::map<std::string, int> passed;
  int crashed = 0, slow = 0, stopped = 0, cases = 0;
  for (const CaseResult& r : rs) cases += r.kernel == "residual_add_crashes_at_31";
  // A GPU drops the far out-of-bounds shared write (nothing crashes) and runs the slow case
  // within the timeout: only the run going on is to be seen there.
  if (vk::Context("").info().type != "cpu") {
    for (const CaseResult& r : rs) EXPECT_EQ(r.status(), CaseResult::Status::Pass) << case_line(r) << " " << r.error;
    GTEST_SKIP() << "crashes and timeouts of these kernels are a CPU driver's (lavapipe's)";
  }
  for (const CaseResult& r : rs) {
    if (r.status() == CaseResult::Status::Pass) ++passed[r.kernel];
    if (r.kernel == "residual_add_crashes_at_31" && r.status() == CaseResult::Status::Fail) {
      EXPECT_EQ(r.shape, "remainder n 31");
      EXPECT_NE(r.error.find(kSanitized ? "the worker running this case exited with code"
                                        : "the worker running this case was killed by signal"),
                std::string::npos)
          << r.error;
      EXPECT_NE(repro_command(r).find("--shapes 'remainder n 31'"), std::string::npos);
      ++crashed;
    }
    if (r.kernel == "residual_add_slow_at_31" && r.status() == CaseResult::Status::Fail) {
      EXPECT_EQ(r.shape, "remainder n 31");
      EXPECT_NE(r.error.find("hung or too slow"), std::string::npos) << r.error;
      ++slow;
    }
    if (r.kernel == "residual_add_crashes_always" && r.status() == CaseResult::Status::Fail)
      stopped += r.error.find("were not run: its worker died or lost the device 3 times") != std::string::npos;
  }
  EXPECT_EQ(crashed, 1);
  EXPECT_EQ(slow, 1);
  // Every remainder case but n = 31 passes, after the crash too.
  EXPECT_GE(cases, 5);
  EXPECT_EQ(passed["residual_add_crashes_at_31"], cases - 1);
  EXPECT_EQ(passed["residual_add_slow_at_31"], cases - 1);
  EXPECT_EQ(passed["residual_add_crashes_always"], 0);
  EXPECT_EQ(stopped, 1);
}

// The same verdicts in one process and in workers (the bundled kernels of a few ops).
TEST(isolation, SameVerdictsInProcessAndInWorkers) {
  if (!test::have_device()) GTEST_SKIP() << "no Vulkan device";
  CompareOptions o;
  o.ops = "rmsnorm,matvec_q,router_topk", o.shapes = "remainders", o.seeds = 1, o.quiet = true;
  const std::vector<CaseResult> in_process = compare_cases(o);
  o.isolate = true, o.worker_exe = MOE_CLI;
  const std::vector<CaseResult> isolated = compare_cases(o);
  ASSERT_EQ(in_process.size(), isolated.size());
  for (size_t i = 0; i < isolated.size(); ++i) {
    EXPECT_EQ(case_line(in_process[i]).substr(0, 60), case_line(isolated[i]).substr(0, 60));
    EXPECT_EQ(in_process[i].status(), isolated[i].status()) << case_line(isolated[i]);
    ASSERT_EQ(in_process[i].outputs.size(), isolated[i].outputs.size());
    for (size_t k = 0; k < isolated[i].outputs.size(); ++k)
      EXPECT_EQ(in_process[i].outputs[k].budget_used, isolated[i].outputs[k].budget_used);
  }
}

// A device that disappears during a run (a GPU reset, a removed eGPU): every worker after the
// first finds no device (fault injected by the parent: MOE_FAULT_DEVICE_GONE_AFTER=1). The first
// plan's cases are decided; each later plan gets one line per attempt naming the device, then
// the kMaxWorkerDeaths line; the run ends with its results, no exception, no hang. A device that
// is lost while a case runs surfaces as an error of that dispatch, the same path as the slow
// kernel above (run_case.cpp: device_fault, a fresh worker for the next case).
TEST(isolation, ADeviceThatDisappearsFailsThePlansLeftAndTheRunEnds) {
  if (!test::have_device()) GTEST_SKIP() << "no Vulkan device";
  CompareOptions o;
  o.ops = "rmsnorm,residual_add", o.shapes = "remainders", o.seeds = 1, o.quiet = true;
  o.isolate = true, o.worker_exe = MOE_CLI;
  ::setenv("MOE_FAULT_DEVICE_GONE_AFTER", "1", 1);
  const std::vector<CaseResult> rs = compare_cases(o);
  ::unsetenv("MOE_FAULT_DEVICE_GONE_AFTER");
  int first_passed = 0, device_lines = 0, stopped = 0;
  for (const CaseResult& r : rs) {
    if (r.op == "rmsnorm") {
      EXPECT_EQ(r.status(), CaseResult::Status::Pass) << case_line(r) << " " << r.error;
      ++first_passed;
      continue;
    }
    EXPECT_EQ(r.status(), CaseResult::Status::Fail) << case_line(r);
    device_lines += r.error.find("could not open the Vulkan device") != std::string::npos &&
                    r.error.find("MOE_FAULT_NO_DEVICE") != std::string::npos;
    stopped += r.error.find("were not run: its worker died or lost the device 3 times") != std::string::npos;
  }
  EXPECT_GE(first_passed, 5);
  EXPECT_EQ(device_lines, 3);
  EXPECT_EQ(stopped, 1);
}

// A plan the device cannot run (workgroups of 1024 invocations pinned to a subgroup size at which
// the device allows fewer subgroups per workgroup): every case of it fails with the device's limit
// named, isolated and in process alike; none is taken for a dying worker, none is dropped, and the
// next kernel's cases run. Where the device can run it (32-wide subgroups) they pass.
TEST(isolation, APlanErrorFailsItsCasesAndIsNoWorkerDeath) {
  if (!test::have_device()) GTEST_SKIP() << "no Vulkan device";
  CompareOptions o;
  o.kernels = test::kData + "isolation/plan_error.json", o.ops = "residual_add", o.shapes = "remainders";
  o.seeds = 1, o.quiet = true;
  const std::vector<CaseResult> in_process = compare_cases(o);
  o.isolate = true, o.worker_exe = MOE_CLI;
  const std::vector<CaseResult> isolated = compare_cases(o);
  ASSERT_EQ(in_process.size(), isolated.size());
  int wide = 0, refused = 0, after = 0;
  for (size_t i = 0; i < isolated.size(); ++i) {
    const CaseResult& r = isolated[i];
    EXPECT_EQ(r.error, in_process[i].error) << case_line(r);
    EXPECT_EQ(r.error.find("worker"), std::string::npos) << case_line(r) << " " << r.error;
    if (r.kernel == "residual_add_after") {
      EXPECT_EQ(r.status(), CaseResult::Status::Pass) << case_line(r) << " " << r.error;
      ++after;
      continue;
    }
    ++wide;
    if (r.status() == CaseResult::Status::Pass) continue;
    EXPECT_NE(r.error.find("exceeds maxComputeWorkgroupSubgroups"), std::string::npos) << case_line(r) << " " << r.error;
    ++refused;
  }
  EXPECT_GE(wide, 5);
  EXPECT_EQ(after, wide);
  if (vk::Context("").info().max_subgroup_size < 32) {
    EXPECT_EQ(refused, wide);  // lavapipe: every case
  }
}

}  // namespace
}  // namespace moe::compare
