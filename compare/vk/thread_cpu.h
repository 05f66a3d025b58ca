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

// A job watched for a hang: a dispatch (pid 0: this process, whose threads a CPU driver runs it
// on), a compare worker's or a mutate child's case. Past its
// limit of wall-clock time, a job on a CPU driver gets a grace of the limit again in CPU time on
// the child's busiest thread: a job that needed less than the limit on an idle machine, stretched
// by the load, finishes in it; a hung child spins through it. 10x the limit of wall-clock time at
// most. On a GPU the limit is wall-clock time (the child's own dispatch timeouts come first).
class JobWatch {
 public:
  void start() { since_ = std::chrono::steady_clock::now(), grace_.reset(); }
  bool hangs(pid_t pid, std::chrono::milliseconds limit, bool cpu_driver);

 private:
  std::chrono::steady_clock::time_point since_;
  std::optional<ThreadCpuClock> grace_;
};

}  // namespace moe::vk
