// Isolated workers (isolate.h): the worker's loop, and the parent's pool that starts workers,
// reads their results, and turns a death or a hang into the FAIL of the case that caused it.
#include "compare/run/isolate.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <limits>
#include <optional>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "compare/cases/bound_mode.h"
#include "compare/run/calibrate.h"
#include "compare/report/result_codec.h"
#include "compare/vk/runner.h"
#include "compare/vk/thread_cpu.h"
#include "core/check.h"

extern char** environ;

namespace moe::compare {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// ---- the worker ---------------------------------------------------------------------------

namespace {

void emit(int fd, const json& msg) {
  const std::string line = msg.dump() + "\n";
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) ::_exit(2);  // the parent is gone: nobody reads the results
    done += size_t(n);
  }
}

}  // namespace

// The worker's device. A device that cannot be opened (it disappeared since the run started: a
// GPU reset, a removed eGPU, a driver crash) is reported as {"device_error"}: the parent fails
// this plan's remaining cases with it and the run goes on, where any other {"error"} stops it.
// MOE_FAULT_NO_DEVICE=1 (set by the parent for tests, see spawn) makes the device unopenable.
std::optional<vk::Context> open_device(const CompareOptions& opt, int fd) {
  try {
    MOE_CHECK(!std::getenv("MOE_FAULT_NO_DEVICE"), "vulkan: no device '" << opt.device
                                                       << "' (MOE_FAULT_NO_DEVICE: a device gone, injected by a test)");
    return std::optional<vk::Context>(std::in_place, opt.device,
                                      opt.perf ? vk::Context::Memory::DeviceSpeed : vk::Context::Memory::Readback);
  } catch (const Error& e) {
    emit(fd, {{"device_error", e.what()}});
    return std::nullopt;
  }
}

int run_worker(const CompareOptions& opt, const WorkerTask& task) {
  poison_fresh_memory();
  try {
    const std::set<std::string> only(task.kernels.begin(), task.kernels.end());
    const Manifest m = load_kernels(opt.kernels, opt.kernels_root, &only);
    std::optional<vk::Context> device = open_device(opt, task.fd);
    if (!device) return 2;
    vk::Context& ctx = *device;
    std::string why;
    const std::vector<Plan> plans = plans_for(m, task.op, &why);
    const auto it = std::find_if(plans.begin(), plans.end(), [&](const Plan& p) { return p.label == task.plan; });
    MOE_CHECK(it != plans.end(), "compare worker: op '" << task.op << "' has no plan '" << task.plan << "'"
                                                        << (why.empty() ? "" : ": " + why));
    const PlanRun pr{task.plan_index, &*it, plan_subgroup_sizes(*it, ctx.info(), opt.subgroup)};
    UnitHooks hooks;
    hooks.start = [&](int64_t unit, const CaseResult& proto, int steps) {
      emit(task.fd, {{"start", result_to_json(proto)}, {"unit", unit}, {"steps", steps}});
    };
    hooks.result = [&](CaseResult&& r) {
      emit(task.fd, {{"result", result_to_json(r)}});
      // The device may be unusable after a timeout or a lost device, and a hung kernel may
      // still run on a CPU driver: leave now, without waiting for it; a fresh worker goes on.
      if (r.device_fault) ::_exit(kExitRestart);
    };
    run_op_cases(ctx, m, task.op, {pr}, opt, task.resume, hooks);
    emit(task.fd, {{"done", true}});
    return 0;
  } catch (const Error& e) {
    emit(task.fd, {{"error", e.what()}});
    return 2;
  }
}

std::string worker_request(const CompareOptions& opt, const WorkerTask& task) {
  const Shard sh = parse_shard(opt);
  const json options = {{"kernels", opt.kernels},      {"kernels_root", opt.kernels_root}, {"seed", opt.seed},
                        {"seeds", opt.seeds},          {"shapes", opt.shapes},
                        {"shard", std::to_string(sh.index) + "/" + std::to_string(sh.count)},
                        {"subgroup", opt.subgroup},    {"timeout_ms", opt.timeout_ms},
                        {"device", opt.device},        {"perf", opt.perf}};
  const json t = {{"op", task.op},         {"plan", task.plan},       {"plan_index", task.plan_index},
                  {"kernels", task.kernels}, {"resume", task.resume}};
  return json{{"options", options},
              {"task", t},
              {"bounds", bound_mode_name(bound_mode())},
              {"precision", precision_to_json(precision())}}
      .dump();
}

int worker_main(int argc, char** argv) {
  constexpr int kFd = 3;
  CompareOptions opt;
  WorkerTask task;
  try {
    MOE_CHECK(argc == 3 && std::string(argv[1]) == kWorkerCommand,
              "expected `" << kWorkerCommand << " <request JSON>`, got " << argc - 2 << " arguments");
    const json r = json::parse(argv[2]);
    const json& o = r.at("options");
    opt.kernels = o.at("kernels").get<std::string>(), opt.seed = o.at("seed").get<uint64_t>();
    opt.kernels_root = o.at("kernels_root").get<std::string>();
    opt.seeds = o.at("seeds").get<int>(), opt.shapes = o.at("shapes").get<std::string>();
    opt.shard = o.at("shard").get<std::string>(), opt.subgroup = o.at("subgroup").get<uint32_t>();
    opt.timeout_ms = o.at("timeout_ms").get<uint64_t>(), opt.device = o.at("device").get<std::string>();
    opt.perf = o.at("perf").get<bool>();
    const json& t = r.at("task");
    task.fd = kFd, task.op = t.at("op").get<std::string>(), task.plan = t.at("plan").get<std::string>();
    task.plan_index = t.at("plan_index").get<size_t>(), task.resume = t.at("resume").get<int64_t>();
    task.kernels = t.at("kernels").get<std::vector<std::string>>();
    set_bound_mode(parse_bound_mode(r.at("bounds").get<std::string>()));
    set_precision(precision_from_json(r.at("precision")));
  } catch (const std::exception& e) {  // moe::Error and nlohmann's parse and type errors
    const std::string why = std::string("compare worker: malformed request: ") + e.what();
    std::fprintf(stderr, "moeoracle: error: %s\n", why.c_str());
    struct stat st;  // a parent's message pipe, not whatever a shell left open as descriptor 3
    if (::fstat(kFd, &st) == 0 && S_ISFIFO(st.st_mode)) emit(kFd, {{"error", why}});
    return 2;
  }
  return run_worker(opt, task);
}

// ---- the parent ---------------------------------------------------------------------------

namespace {

struct Worker {
  size_t work = 0;  // index into CompareRun::work
  pid_t pid = -1;
  int out = -1, err = -1;  // read ends of the message pipe and of stdout + stderr
  std::string line_buf, err_tail;
  bool in_case = false;
  CaseResult current;  // the case it is running (without outputs), for a death report
  int64_t unit = -1;
  int steps = 1;
  vk::JobWatch watch;  // the case it runs
  bool done = false, hung = false;
  std::string fatal;  // an {"error"} message
  std::string device_error;  // a {"device_error"}: the worker could not open the device
};

struct PlanState {
  int64_t next_unit = 0;
  int deaths = 0;
};

std::vector<std::string> worker_args(const CompareOptions& opt, const std::string& op, const PlanRun& pr,
                                     int64_t resume) {
  WorkerTask task;
  task.fd = 3, task.op = op, task.plan = pr.plan->label, task.plan_index = pr.index, task.resume = resume;
  std::set<std::string> kernels;
  for (const KernelEntry* k : pr.plan->kernels) kernels.insert(k->name);
  for (const auto& alts : pr.plan->alternatives)
    for (const KernelEntry* k : alts) kernels.insert(k->name);
  task.kernels.assign(kernels.begin(), kernels.end());
  return {opt.worker_exe, kWorkerCommand, worker_request(opt, task)};
}

// `spawned`: the workers this run started so far (for MOE_FAULT_DEVICE_GONE_AFTER).
Worker spawn(const CompareOptions& opt, const CompareRun& run, size_t work, int64_t resume, int& spawned) {
  int msg[2], err[2];
  MOE_CHECK(::pipe2(msg, O_CLOEXEC) == 0 && ::pipe2(err, O_CLOEXEC) == 0,
            "compare: cannot create pipes for a worker: " << std::strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, err[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  posix_spawn_file_actions_adddup2(&fa, msg[1], 3);
  const std::vector<std::string> args = worker_args(opt, run.work[work].first, run.work[work].second, resume);
  std::vector<char*> argv;
  for (const std::string& s : args) argv.push_back(const_cast<char*>(s.c_str()));
  argv.push_back(nullptr);
  Worker w;
  w.work = work;
  // Fault injection for tests: MOE_FAULT_DEVICE_GONE_AFTER=N takes the device away from every
  // worker after the first N (isolation_test: a device that disappears during a run).
  std::vector<char*> env;
  for (char** e = environ; *e; ++e) env.push_back(*e);
  const int threads = worker_omp_threads(opt.jobs, std::thread::hardware_concurrency(), std::getenv("OMP_NUM_THREADS"));
  std::string omp = "OMP_NUM_THREADS=" + std::to_string(threads);
  if (threads > 0) env.push_back(omp.data());
  static char no_device[] = "MOE_FAULT_NO_DEVICE=1";
  if (const char* n = std::getenv("MOE_FAULT_DEVICE_GONE_AFTER"); n && spawned >= std::atoi(n)) env.push_back(no_device);
  env.push_back(nullptr);
  ++spawned;
  const int rc = ::posix_spawn(&w.pid, opt.worker_exe.c_str(), &fa, nullptr, argv.data(), env.data());
  posix_spawn_file_actions_destroy(&fa);
  ::close(msg[1]), ::close(err[1]);
  if (rc != 0) {
    ::close(msg[0]), ::close(err[0]);
    MOE_FAIL("compare: cannot start the worker '" << opt.worker_exe << "': " << std::strerror(rc));
  }
  w.out = msg[0], w.err = err[0];
  return w;
}

// "was killed by signal 11 (SIGSEGV: Segmentation fault)", "exited with code 1".
std::string death(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* abbrev = sigabbrev_np(sig);
    return "was killed by signal " + std::to_string(sig) + " (SIG" + (abbrev ? abbrev : "?") + ": " + strsignal(sig) +
           ")";
  }
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  return "ended with status " + std::to_string(status);
}

// The last lines the worker wrote to stdout/stderr ("" if none), for a death report.
std::string last_lines(const std::string& tail) {
  std::string t = tail;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  if (t.empty()) return "";
  size_t from = t.size(), lines = 0;
  while (from > 0 && lines < 4)
    if (t[--from] == '\n') ++lines;
  if (t[from] == '\n') ++from;
  std::string out = t.substr(from);
  for (char& c : out)
    if (c == '\n') c = '|';
  return "; its last output: " + out;
}

// Messages on the worker's pipe, one JSON line each.
void take_line(Worker& w, const std::string& line, PlanState& st, std::vector<CaseResult>& results) {
  json j;
  try {
    j = json::parse(line);
  } catch (const json::exception&) {
    w.fatal = "compare worker: unreadable message: " + line.substr(0, 200);
    return;
  }
  if (j.contains("start")) {
    w.current = result_from_json(j["start"]);
    w.unit = j.at("unit").get<int64_t>(), w.steps = j.at("steps").get<int>();
    w.in_case = true;
    w.watch.start();
  } else if (j.contains("result")) {
    results.push_back(result_from_json(j["result"]));
    w.in_case = false;
    st.next_unit = w.unit + 1;
  } else if (j.contains("device_error")) {
    w.device_error = j["device_error"].get<std::string>();
  } else if (j.contains("error")) {
    w.fatal = j["error"].get<std::string>();
  } else if (j.contains("done")) {
    w.done = true;
  }
}

// Reads what is there; false at end of file.
bool drain(int fd, std::string& into) {
  char buf[65536];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  if (n < 0) return errno == EINTR || errno == EAGAIN;
  into.append(buf, size_t(n));
  return n > 0;
}

// A worker has ended (both pipes closed, reaped): record what it means.
void finish(Worker& w, int status, const CompareRun& run, std::vector<PlanState>& state,
            std::vector<CaseResult>& results, std::deque<size_t>& pending, std::string& fatal) {
  PlanState& st = state[w.work];
  if (!w.fatal.empty()) {
    fatal = w.fatal;
    return;
  }
  if (w.done && WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  const bool restart = WIFEXITED(status) && WEXITSTATUS(status) == kExitRestart && !w.in_case;
  const auto& [op, pr] = run.work[w.work];
  if (!w.device_error.empty()) {
    // Counted as a death: a device back after a reset gets a fresh worker; one gone for good ends
    // the plan after kMaxWorkerDeaths tries with the line below.
    CaseResult r;
    r.op = op, r.kernel = pr.plan->label, r.manifest = run.manifest.path, r.plan_index = int(pr.index);
    r.case_pos = std::numeric_limits<int64_t>::max() - 1;
    r.error = "a fresh worker for this plan's cases from #" + std::to_string(st.next_unit) +
              " could not open the Vulkan device (gone since the run started?): " + w.device_error;
    results.push_back(std::move(r));
  } else if (!restart) {
    CaseResult r = w.in_case ? w.current : CaseResult{};
    if (!w.in_case) r.op = op, r.kernel = pr.plan->label, r.manifest = run.manifest.path, r.plan_index = int(pr.index);
    r.error = std::string(w.in_case ? "the worker running this case " : "the worker of this plan, outside any case, ") +
              (w.hung ? "stopped answering (hung) and was killed" : death(status)) + last_lines(w.err_tail);
    results.push_back(std::move(r));
    if (!w.in_case) return;  // it died building cases or loading kernels: a new one would too
    st.next_unit = w.unit + 1;
  }
  if (++st.deaths >= kMaxWorkerDeaths) {
    CaseResult r;
    r.op = op, r.kernel = pr.plan->label, r.manifest = run.manifest.path, r.plan_index = int(pr.index);
    r.case_pos = std::numeric_limits<int64_t>::max();
    r.error = "the remaining cases of this plan were not run: its worker died or lost the device " +
              std::to_string(st.deaths) + " times";
    results.push_back(std::move(r));
    return;
  }
  pending.push_front(w.work);
}

// How long a case may run before its worker is taken to hang: every step's dispatch has its own
// timeout (the worker reports those itself), plus the driver's compile of the case's new pipelines
// (limited apart: vk::compile_limit_ms), plus the --perf batch (at most 2 x 25 + 1 runs' worth),
// plus a minute for the host side (big cases' downloads and decisions).
std::chrono::milliseconds hang_limit(const CompareOptions& opt, int steps) {
  return std::chrono::milliseconds(int64_t(opt.timeout_ms) * (steps + (opt.perf ? 51 : 0)) +
                                   int64_t(vk::compile_limit_ms(opt.timeout_ms)) + 60000);
}

}  // namespace

int worker_omp_threads(int jobs, unsigned cores, const char* user) {
  if (jobs <= 1 || (user && *user)) return 0;
  return std::max(1, int(cores) / jobs);
}

std::vector<CaseResult> compare_isolated(const CompareOptions& opt) {
  MOE_CHECK(!opt.worker_exe.empty(), "compare: isolated workers need the moeoracle executable (worker_exe)");
  const std::vector<vk::DeviceInfo> devs = vk::list_devices();
  const vk::DeviceInfo& info = devs.at(size_t(vk::choose_device(devs, opt.device)));
  const CompareRun run = prepare_run(opt, info);
  print_header(opt, info, run.manifest);
  std::vector<CaseResult> results = run.unrunnable;
  std::vector<PlanState> state(run.work.size());
  std::deque<size_t> pending;
  for (size_t i = 0; i < run.work.size(); ++i) pending.push_back(i);
  std::vector<Worker> active;
  std::string fatal;
  int spawned = 0;
  while (fatal.empty() && (!pending.empty() || !active.empty())) {
    while (int(active.size()) < std::max(1, opt.jobs) && !pending.empty()) {
      const size_t w = pending.front();
      pending.pop_front();
      active.push_back(spawn(opt, run, w, state[w].next_unit, spawned));
    }
    std::vector<pollfd> fds;
    for (const Worker& w : active) {
      fds.push_back({w.out, POLLIN, 0});
      fds.push_back({w.err, POLLIN, 0});
    }
    ::poll(fds.data(), fds.size(), 500);
    for (size_t i = 0; i < active.size(); ++i) {
      Worker& w = active[i];
      if (w.out >= 0 && (fds[2 * i].revents & (POLLIN | POLLHUP | POLLERR))) {
        if (!drain(w.out, w.line_buf)) ::close(w.out), w.out = -1;
        for (size_t nl; (nl = w.line_buf.find('\n')) != std::string::npos;) {
          take_line(w, w.line_buf.substr(0, nl), state[w.work], results);
          w.line_buf.erase(0, nl + 1);
        }
      }
      if (w.err >= 0 && (fds[2 * i + 1].revents & (POLLIN | POLLHUP | POLLERR))) {
        if (!drain(w.err, w.err_tail)) ::close(w.err), w.err = -1;
        if (w.err_tail.size() > 4096) w.err_tail.erase(0, w.err_tail.size() - 4096);
      }
      if (w.in_case && !w.hung && w.watch.hangs(w.pid, hang_limit(opt, w.steps), info.type == "cpu")) {
        ::kill(w.pid, SIGKILL);
        w.hung = true;
      }
    }
    for (size_t i = active.size(); i-- > 0;) {
      Worker& w = active[i];
      if (w.out >= 0 || w.err >= 0) continue;
      int status = 0;
      while (::waitpid(w.pid, &status, 0) < 0 && errno == EINTR) {
      }
      finish(w, status, run, state, results, pending, fatal);
      active.erase(active.begin() + std::ptrdiff_t(i));
    }
  }
  for (Worker& w : active) {  // a fatal error: stop the others
    ::kill(w.pid, SIGKILL);
    if (w.out >= 0) ::close(w.out);
    if (w.err >= 0) ::close(w.err);
    ::waitpid(w.pid, nullptr, 0);
  }
  MOE_CHECK(fatal.empty(), fatal);
  return merge_results(std::move(results), run.ops);
}

}  // namespace moe::compare
