// A dispatch's time limit and the machine's load: on a CPU driver a dispatch past its limit gets a
// grace in the driver threads' CPU time (compare/vk/thread_cpu.h, JobWatch), so a kernel that a
// loaded machine cannot finish within the limit of wall-clock time is not taken for a hung one;
// and the driver's compile at a pipeline's first dispatch is limited apart from the kernel.
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "compare/vk/runner.h"
#include "compare/vk/thread_cpu.h"
#include "core/check.h"
#include "vulkan/test_glsl.h"

namespace moe::vk {
namespace {

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}

void spin_cpu_ms(double ms) {
  const double t0 = thread_cpu_ms();
  while (thread_cpu_ms() - t0 < ms) {
  }
}

TEST(ThreadCpuClock, TheBusiestThreadsCpuTimeSinceTheStart) {
  spin_cpu_ms(100);  // before the start: not counted
  const ThreadCpuClock clock;
  std::atomic<bool> spun{false}, stop{false};
  std::thread spinner([&] {
    spin_cpu_ms(50);
    spun = true;
    while (!stop) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  while (!spun) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  // While the spinner still exists: an ended thread is gone from /proc.
  const double ms = clock.busiest_ms();
  stop = true;
  spinner.join();
  EXPECT_GE(ms, 50);
  EXPECT_LT(ms, 100) << "this thread's CPU time before the start was counted";
}

// A child process that spins (a hung worker) or sleeps (one blocked), killed at the end of the scope.
class Child {
 public:
  explicit Child(bool spin) : pid_(fork()) {
    if (pid_ != 0) return;
    if (spin) {
      volatile unsigned n = 0;
      for (;;) n = n + 1;
    }
    for (;;) pause();
  }
  ~Child() { kill(pid_, SIGKILL), waitpid(pid_, nullptr, 0); }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_;
};

TEST(JobWatch, ACpuDriversChildGetsAGraceInCpuTime) {
  using std::chrono::milliseconds;
  const milliseconds limit(300);
  {
    // Blocked: past the limit it uses no CPU time, so it is waited for up to 10x the limit.
    const Child sleeper(false);
    JobWatch watch;
    watch.start();
    std::this_thread::sleep_for(milliseconds(400));
    EXPECT_FALSE(watch.hangs(sleeper.pid(), limit, true));
    EXPECT_TRUE(watch.hangs(sleeper.pid(), limit, false)) << "a GPU's job: wall-clock time";
    std::this_thread::sleep_for(milliseconds(2700));
    EXPECT_TRUE(watch.hangs(sleeper.pid(), limit, true)) << "past 10x the limit";
  }
  // Spinning: hung once it has spun the limit again in CPU time past the limit.
  const Child spinner(true);
  JobWatch watch;
  watch.start();
  std::this_thread::sleep_for(milliseconds(310));
  watch.hangs(spinner.pid(), limit, true);  // the grace starts
  const ThreadCpuClock spun(spinner.pid());
  while (spun.busiest_ms() <= double(limit.count()) + 20) std::this_thread::sleep_for(milliseconds(5));
  EXPECT_TRUE(watch.hangs(spinner.pid(), limit, true));
}

std::vector<pid_t> thread_ids() {
  std::vector<pid_t> out;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task"))
    out.push_back(pid_t(std::stol(e.path().filename().string())));
  return out;
}

// Every thread of this process on one CPU, and busy processes beside them there: undone at the
// end of the scope.
class OneLoadedCpu {
 public:
  explicit OneLoadedCpu(int hogs) {
    sched_getaffinity(0, sizeof saved_, &saved_);
    int cpu = 0;
    while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &saved_)) ++cpu;
    CPU_ZERO(&one_);
    CPU_SET(cpu, &one_);
    set_all(one_);
    for (int i = 0; i < hogs; ++i) {
      const pid_t pid = fork();
      if (pid == 0) {
        sched_setaffinity(0, sizeof one_, &one_);
        volatile unsigned n = 0;
        for (;;) n = n + 1;
      }
      if (pid > 0) hogs_.push_back(pid);
    }
  }
  ~OneLoadedCpu() {
    for (pid_t p : hogs_) kill(p, SIGKILL), waitpid(p, nullptr, 0);
    set_all(saved_);
  }
  OneLoadedCpu(const OneLoadedCpu&) = delete;
  OneLoadedCpu& operator=(const OneLoadedCpu&) = delete;

 private:
  static void set_all(const cpu_set_t& set) {
    for (pid_t tid : thread_ids()) sched_setaffinity(tid, sizeof set, &set);
  }
  cpu_set_t saved_{}, one_{};
  std::vector<pid_t> hogs_;
};

TEST(VulkanRunnerLoad, ALoadedCpuDriverDoesNotTimeAKernelOut) {
  if (list_devices().empty()) GTEST_SKIP() << "no Vulkan device";
  // One driver thread (lavapipe reads LP_NUM_THREADS when a Context opens it): all the work lands
  // on it whatever the scheduling, so its CPU time is the kernel's.
  setenv("LP_NUM_THREADS", "1", 1);
  Context ctx;
  unsetenv("LP_NUM_THREADS");
  if (ctx.info().type != "cpu") GTEST_SKIP() << ctx.info().name << " is a GPU: its limit is wall-clock time";
  const std::vector<uint32_t> spin = test::glsl("spin.comp", R"(#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) writeonly buffer Y { uint y[]; };
void main() {
  uint acc = gl_WorkGroupID.x;
  for (uint k = 0u; k < 60000u; ++k) acc = acc * 1664525u + 1013904223u + k;
  y[gl_WorkGroupID.x] = acc;
})");
  const uint32_t groups = 2048;  // 0.1-0.3 s on one lavapipe thread
  Buffer y = ctx.make_buffer(4 * groups);
  Dispatch d;
  d.label = "spin", d.spirv = spin, d.bindings = {{0, &y, 0, 0}}, d.groups[0] = groups;
  const ThreadCpuClock clock;
  ctx.run({d}, 600000);
  const double alone = clock.busiest_ms();
  ASSERT_GT(alone, 0);
  // 2.5x its CPU time as the limit; beside 4 busy processes on one CPU it takes about 5x that
  // long in wall-clock time.
  const uint64_t limit_ms = uint64_t(2.5 * alone) + 1;
  double wall_ms = 0;
  {
    const OneLoadedCpu loaded(4);
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_NO_THROW(ctx.run({d}, limit_ms));
    wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  EXPECT_GT(wall_ms, double(limit_ms)) << "the load did not stretch the run (" << alone
                                        << " ms of CPU alone): the test shows nothing";
}

// A kernel with `steps` barrier-separated shared-memory steps, each its own constant (lavapipe
// compiles a kernel with barriers as a coroutine: its compile time grows with the steps, its run
// on one workgroup stays well under a millisecond). `salt` makes its SPIR-V new to the driver
// (and to Mesa's shader cache).
std::vector<uint32_t> barrier_steps(uint32_t steps, uint64_t salt) {
  std::string src = "#version 450\nlayout(local_size_x = 64) in;\n"
                    "layout(set = 0, binding = 0) writeonly buffer Y { uint y[]; };\n"
                    "shared uint s[64];\nvoid main() {\n  uint i = gl_LocalInvocationIndex;\n"
                    "  uint a = i + " + std::to_string(salt % 1000003u) + "u;\n";
  for (uint32_t k = 0; k < steps; ++k) {
    const std::string c = std::to_string(2654435761u * (k + 1) + uint32_t(salt >> 20));
    src += "  s[i] = a * " + c + "u + " + std::to_string(k) + "u;\n  barrier();\n  a ^= s[(i + " +
           std::to_string(k % 63 + 1) + "u) & 63u];\n  barrier();\n";
  }
  src += "  y[i] = a;\n}\n";
  return test::glsl("barrier_steps.comp", src.c_str());
}

TEST(VulkanRunnerLoad, ACpuDriversCompileIsNotTheKernelsTime) {
  if (list_devices().empty()) GTEST_SKIP() << "no Vulkan device";
  Context ctx;
  if (ctx.info().type != "cpu") GTEST_SKIP() << ctx.info().name << " compiles a pipeline when it is created";
  const uint64_t salt = uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()) ^ uint64_t(getpid());
  Buffer y = ctx.make_buffer(4 * 64);
  const auto dispatch = [&](const std::vector<uint32_t>& spirv) {  // spirv: kept alive by the caller
    Dispatch d;
    d.label = "barrier_steps", d.spirv = spirv, d.bindings = {{0, &y, 0, 0}}, d.groups[0] = 1;
    return d;
  };
  const std::vector<uint32_t> sized = barrier_steps(80, salt), fresh = barrier_steps(80, salt + 1),
                              other = barrier_steps(80, salt + 2);
  // The compile's CPU time, measured on a kernel of the same size (the first run compiles it).
  const ThreadCpuClock clock;
  ctx.run({dispatch(sized)}, 600000);
  const double compile_ms = clock.busiest_ms();
  const uint64_t limit_ms = 10;  // the kernel itself: one workgroup of 64, far under 1 ms
  ASSERT_GT(compile_ms, 20.0 * limit_ms) << "the compile is too quick for this test to show anything";

  // A new pipeline under a dispatch limit its compile exceeds 20x: the kernel's time alone counts.
  EXPECT_NO_THROW(ctx.run({dispatch(fresh)}, limit_ms));

  // Under a compile limit of its own that short, the compile fails, named as one.
  ctx.set_compile_limit(limit_ms);
  try {
    ctx.run({dispatch(other)}, 600000);
    ADD_FAILURE() << "a compile of about " << compile_ms << " ms of CPU time passed a limit of " << limit_ms << " ms";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("did not finish compiling barrier_steps within 10 ms of CPU time"), std::string::npos) << what;
    EXPECT_NE(what.find("the kernel never ran"), std::string::npos) << what;
  }
}
}  // namespace
}  // namespace moe::vk
