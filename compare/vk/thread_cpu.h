#pragma once
// How long a process's busiest thread has run on a CPU since a start point: a timeout on it is
// independent of the machine's load. On a loaded machine a job's threads get a share of a core
// and its wall time stretches, but the CPU time each thread needs stays about what it was; a
// thread's CPU time never exceeds the wall time, so a job spread over many threads (a CPU
// driver's dispatch) is judged by its longest thread, about its wall time on an idle machine.
// Linux: /proc/<pid>/task/<tid>/schedstat (nanoseconds on a CPU).
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>

namespace moe::vk {

class ThreadCpuClock {
 public:
  // Starts now, for process `pid` (0: this process).
  explicit ThreadCpuClock(pid_t pid = 0);
  // The most CPU time any thread of the process has had since the start (threads started since
  // count from 0), in ms; -1 where /proc cannot tell (not Linux, the process gone).
  double busiest_ms() const;

 private:
  pid_t pid_;
  std::map<pid_t, uint64_t> start_ns_;  // per thread id, its CPU time at the start
};

// Waits for a job whose wall-clock limit is `limit_ms`: true while it may go on. The wall clock
// judges a job on a device of its own (a GPU). On the CPU (`cpu` true, a clock started with the
// job) the limit is on the busiest thread's CPU time, with 10 x the limit of wall-clock time as a
// backstop against a job that blocks instead of running (then the machine's load could still
// decide: past 10x).
bool within_limit(double wall_ms, double limit_ms, const ThreadCpuClock* cpu);

// A child process's job (a compare worker's or a mutate child's case) watched for a hang. Past its
// limit of wall-clock time, a job on a CPU driver gets a grace of the limit again in CPU time on
// the child's busiest thread: a job that needed less than the limit on an idle machine, stretched
// by the load, finishes in it; a hung child spins through it. 10x the limit of wall-clock time at
// most. On a GPU the limit is wall-clock time (the child's own dispatch timeouts come first).
class JobWatch {
 public:
  void start() { since_ = std::chrono::steady_clock::now(), grace_.reset(); }
  bool hangs(pid_t child, std::chrono::milliseconds limit, bool cpu_driver);

 private:
  std::chrono::steady_clock::time_point since_;
  std::optional<ThreadCpuClock> grace_;
};

}  // namespace moe::vk
