#include "compare/vk/thread_cpu.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <cstdio>
#include <string>

namespace moe::vk {
namespace {

std::string task_dir(pid_t pid) { return "/proc/" + (pid ? std::to_string(pid) : std::string("self")) + "/task"; }

// Every thread of the process with its CPU time in ns; empty where /proc cannot tell. This
// process's threads are read through their CPU-time clocks (clock_gettime: the clock id of thread
// `tid` is (~tid << 3) | 6, the kernel's encoding that glibc's pthread_getcpuclockid uses), about
// 30 times cheaper than reading each thread's schedstat file, which other processes need.
std::map<pid_t, uint64_t> thread_times(pid_t pid) {
  std::map<pid_t, uint64_t> out;
  const std::string dir = task_dir(pid);
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (const dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const pid_t tid = pid_t(std::stol(e->d_name));
    if (pid == 0) {
      timespec ts{};
      if (clock_gettime(clockid_t((~clockid_t(tid) << 3) | 6), &ts) == 0)
        out[tid] = uint64_t(ts.tv_sec) * 1'000'000'000ull + uint64_t(ts.tv_nsec);
      continue;  // a thread that ended meanwhile: it no longer runs
    }
    const std::string path = dir + "/" + e->d_name + "/schedstat";
    if (FILE* f = std::fopen(path.c_str(), "r")) {
      unsigned long long ns = 0;
      if (std::fscanf(f, "%llu", &ns) == 1) out[tid] = ns;
      std::fclose(f);
    }
  }
  closedir(d);
  return out;
}

}  // namespace

ThreadCpuClock::ThreadCpuClock(pid_t pid) : pid_(pid), start_ns_(thread_times(pid)) {}

double ThreadCpuClock::busiest_ms() const {
  const std::map<pid_t, uint64_t> now = thread_times(pid_);
  if (now.empty()) return -1;
  uint64_t most = 0;
  for (const auto& [tid, ns] : now) {
    auto s = start_ns_.find(tid);
    const uint64_t from = s == start_ns_.end() || s->second > ns ? 0 : s->second;  // a new thread
    most = std::max(most, ns - from);
  }
  return double(most) / 1e6;
}

bool JobWatch::hangs(pid_t pid, std::chrono::milliseconds limit, bool cpu_driver) {
  const auto wall = std::chrono::steady_clock::now() - since_;
  if (wall <= limit) return false;
  if (!cpu_driver || wall > 10 * limit) return true;
  if (!grace_) grace_.emplace(pid);
  const double busiest = grace_->busiest_ms();
  return busiest < 0 || busiest > double(limit.count());  // < 0: the process is gone
}

}  // namespace moe::vk
