// `moeoracle mutate` (mutate.h): mutants made and compiled in the parent, cases built once per op
// in the parent, each mutant run in a forked child against them.
#include "compare/mutate/mutate.h"
#include "compare/mutate/claims.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "compare/report/result_codec.h"
#include "compare/run/driver.h"
#include "compare/run/trace.h"
#include "compare/manifest/bundled_manifest.h"
#include "oracle/atomic_file.h"
#include "compare/shaders/bundled.h"
#include "compare/vk/runner.h"
#include "compare/vk/thread_cpu.h"
#include "core/strings.h"
#include "core/check.h"

namespace moe::compare {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  MOE_CHECK(f, "mutate: cannot read '" << path << "'");
  std::ostringstream os;
  os << f.rdbuf();
  return os.str();
}

// --mutants: kernel -> the mutant ids listed for it. Lines "<kernel> <id>"; blank lines and lines
// starting with '#' are skipped.
std::map<std::string, std::set<std::string>> read_mutant_list(const std::string& path) {
  std::map<std::string, std::set<std::string>> want;
  std::istringstream in(read_text(path));
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos || line[0] == '#') continue;
    const size_t sp = line.find(' ');
    MOE_CHECK(sp != std::string::npos && sp > 0 && sp + 1 < line.size(),
              "mutate: '" << path << "' line " << n << ": expected \"<kernel> <mutant id>\" (e.g. \"rmsnorm 28:24 "
                          << "int_plus_one '0' -> '1'\"), found \"" << line << "\"");
    std::string id = line.substr(sp + 1);
    while (!id.empty() && (id.back() == '\r' || id.back() == ' ')) id.pop_back();
    want[line.substr(0, sp)].insert(id);
  }
  MOE_CHECK(!want.empty(), "mutate: '" << path << "' lists no mutants");
  return want;
}

// The ops whose plans use kernel `k` (its own op, a chain it is a stage of, a fused op).
std::vector<std::string> ops_of(const Manifest& m, const KernelEntry& k) {
  std::vector<std::string> out;
  for (const std::string& op : case_ops())
    for (const Plan& p : plans_for(m, op, nullptr)) {
      bool uses = std::count(p.kernels.begin(), p.kernels.end(), &k) > 0;
      for (const auto& alts : p.alternatives) uses = uses || std::count(alts.begin(), alts.end(), &k) > 0;
      if (uses && std::find(out.begin(), out.end(), op) == out.end()) out.push_back(op);
    }
  return out;
}

std::string criterion_of(const CaseResult& r) {
  const std::string& e = r.error;
  if (!e.empty()) {
    if (e.find("killed by signal") != std::string::npos || e.find("exited with code") != std::string::npos) return "crash";
    if (e.find("did not finish compiling") != std::string::npos) return "compile_timeout";
    if (e.find("hung") != std::string::npos || e.find("did not finish") != std::string::npos) return "timeout";
    if (e.find("past its end") != std::string::npos) return "guard";
    if (e.find("out-of-range access") != std::string::npos) return "bounds";
    if (e.find("outside its views") != std::string::npos) return "view";
    if (e.find("was changed") != std::string::npos) return "input_changed";
    if (e.find("vulkan:") != std::string::npos) return "pipeline";
    return "error";
  }
  static const std::pair<uint32_t, const char*> kBits[] = {
      {kUnwritten, "unwritten"}, {kSpecial, "nan_inf"},   {kElement, "element"},       {kCosine, "cosine"},
      {kNormRatio, "norm_ratio"}, {kMaxAbs, "max_abs_rel"}, {kIndexSet, "index_set"}};
  for (const Verdict& v : r.outputs)
    if (!v.pass)
      for (auto [bit, name] : kBits)
        if (v.failed & bit) return name;
  return r.outputs.empty() ? "no_output" : "error";
}

std::string first_reason(const CaseResult& r) {
  std::string line = case_line(r);
  if (!r.error.empty()) return line + " | " + r.error;
  for (const Verdict& v : r.outputs)
    if (!v.pass) return line + " | " + v.reason;
  return line;
}

// A mutation unit: one source file (a kernel's GLSL, or an #included file the manifest lists in
// "mutate_includes") and the selected kernels whose compile reads it. A mutant of the file is
// judged by all of them: it is killed when a case of any of them fails, so code that one
// kernel's defines or constants leave unused is still judged by the kernels that use it.
struct Unit {
  std::string name;             // the kernel's, when one kernel uses the file as its own source; else the file's
  std::string path;             // absolute
  std::shared_ptr<const SourceFiles> files;
  std::vector<size_t> kernels;  // into Manifest::kernels
};

// What a child runs: the unit's kernels (their SPIR-V replaced by `spirv` when given) on every
// case of their ops, through every plan that uses one of them, at every subgroup size.
struct Job {
  size_t result = 0;                          // index into MutateReport::mutants; SIZE_MAX: the baseline
  // Parallel to Unit::kernels, each kernel's mutated SPIR-V; an empty module: the mutant leaves
  // that kernel unchanged (optimized SPIR-V equal), so its plans cannot kill it and do not run.
  // Empty: the baseline, every kernel as loaded.
  std::vector<std::vector<uint32_t>> spirv;
  bool alone = false;                         // run with no other child (after a lost device)
  int lost = 0;                               // times the device was lost while it ran alone
  // A rerun, alone and with kConfirmFactor times the time limit, of a mutant that timed out: on a
  // CPU driver a loaded machine or a long shader compile can pass the limit; a hang hangs again.
  bool confirm = false;
};
constexpr uint32_t kConfirmFactor = 5;

uint32_t timeout_of(const Job& job, const MutateOptions& opt) {
  return opt.timeout_ms * (job.confirm ? kConfirmFactor : 1u);
}

// Cases by op and the conventions they were built with (a plan's, compare/cases/conventions.h).
using CaseKey = std::pair<std::string, Conventions>;
using CaseSets = std::map<CaseKey, std::vector<OpCase>>;

// Whether plan `p` uses one of the unit's kernels (those with a module in `job`, when given).
bool plan_uses_any(const Plan& p, const Manifest& m, const Unit& u, const Job* job = nullptr) {
  for (size_t i = 0; i < u.kernels.size(); ++i) {
    if (job && !job->spirv.empty() && job->spirv[i].empty()) continue;
    const KernelEntry* k = &m.kernels[u.kernels[i]];
    if (std::count(p.kernels.begin(), p.kernels.end(), k)) return true;
    for (const auto& alts : p.alternatives)
      if (std::count(alts.begin(), alts.end(), k)) return true;
  }
  return false;
}

// The (op, conventions) case sets the plans using the unit's kernels need, and those ops in
// case_ops() order.
std::vector<std::string> unit_ops(const Manifest& m, const Unit& u, std::set<CaseKey>& need) {
  std::vector<std::string> ops;
  for (const std::string& op : case_ops())
    for (const Plan& plan : plans_for(m, op, nullptr))
      if (plan_uses_any(plan, m, u)) {
        if (ops.empty() || ops.back() != op) ops.push_back(op);
        need.insert({op, plan_conventions(plan)});
      }
  return ops;
}

// Set by SIGINT/SIGTERM in the parent: stop starting children, kill the running ones, and report
// what finished (a device call's or CI's time limit must not lose a long run's results).
volatile std::sig_atomic_t g_stop = 0;
void on_stop(int) { g_stop = 1; }

void emit(int fd, const json& msg) {
  const std::string line = msg.dump() + "\n";
  for (size_t done = 0; done < line.size();) {
    const ssize_t n = ::write(fd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) ::_exit(2);
    done += size_t(n);
  }
}

// The child: writes {"start": proto} before each case, then {"fail": result} at the first failure
// or {"pass": cases} after the last, and leaves with _exit (nothing of its driver is cleaned up:
// a mutant may have left it in any state).
[[noreturn]] void run_child(Manifest& m, const Unit& u, const Job& job, const CaseSets& cases,
                            const std::vector<std::string>& ops, const MutateOptions& opt, int fd) {
  std::signal(SIGINT, SIG_DFL), std::signal(SIGTERM, SIG_DFL);
  poison_fresh_memory();
  try {
    for (size_t i = 0; i < job.spirv.size(); ++i)
      if (!job.spirv[i].empty()) m.kernels[u.kernels[i]].spirv = job.spirv[i];
    PhaseClock clock([&] { return "mutant " + (job.result == SIZE_MAX ? std::string("baseline") : std::to_string(job.result)); });
    vk::Context ctx(opt.device, vk::Context::Memory::Readback);
    clock.lap("device");
    int64_t ran = 0;
    double max_budget = 0;
    uint32_t min_subgroup = UINT32_MAX, max_subgroup = 0;
    for (const std::string& op : ops)
      for (const Plan& plan : plans_for(m, op, nullptr)) {
        if (!plan_uses_any(plan, m, u, &job)) continue;
        for (uint32_t sg : plan_subgroup_sizes(plan, ctx.info(), opt.subgroup))
          for (const OpCase& c : cases.at({op, plan_conventions(plan)})) {
            CaseResult proto;
            proto.op = c.op, proto.kernel = plan.label, proto.manifest = m.path, proto.params = c.params;
            proto.shape = c.shape, proto.seed = c.seed, proto.subgroup = sg;
            emit(fd, {{"start", result_to_json(proto)},
                      {"steps", std::max<size_t>(1, c.steps.size())},
                      {"cpu_driver", ctx.info().type == "cpu"}});
            const CaseResult r = run_plan_case(ctx, m, plan, c, sg, timeout_of(job, opt));
            const uint32_t size = sg ? sg : ctx.info().subgroup_size;  // 0: the driver's choice
            min_subgroup = std::min(min_subgroup, size), max_subgroup = std::max(max_subgroup, size);
            if (r.status() == CaseResult::Status::Fail) {
              clock.lap("cases"), clock.report();
              emit(fd, {{"fail", result_to_json(r)}, {"cases", ran + 1}, {"subgroup", size}});
              ::_exit(0);
            }
            // A case under a declared difference that fails (DIFFERS) neither kills the mutant nor
            // fails the baseline (docs/manifests.md "Declared differences"); its numbers are no
            // measure of how close the kernel came.
            ran += r.status() == CaseResult::Status::Pass;
            if (r.status() == CaseResult::Status::Differs) continue;
            for (const Verdict& v : r.outputs)
              if (std::isfinite(v.budget_used)) max_budget = std::max(max_budget, v.budget_used);
          }
      }
    clock.lap("cases"), clock.report();
    emit(fd, {{"pass", ran}, {"max_budget", max_budget}, {"min_subgroup", min_subgroup == UINT32_MAX ? 0u : min_subgroup},
              {"max_subgroup", max_subgroup}});
  } catch (const std::exception& e) {
    emit(fd, {{"error", e.what()}});
  }
  ::_exit(0);
}

struct Child {
  pid_t pid = -1;
  int fd = -1;
  Job job;
  std::string buf;
  bool in_case = false, hung = false, finished = false;
  CaseResult current;
  int steps = 1;
  vk::JobWatch watch;  // the case it runs
  bool cpu_driver = false;  // the child's device is a CPU driver (its JobWatch's kind)
  json last;  // the fail/pass/error message
};

Child start_child(Manifest& m, const Unit& u, Job job, const CaseSets& cases, const std::vector<std::string>& ops,
                  const MutateOptions& opt) {
  int p[2];
  MOE_CHECK(::pipe2(p, O_CLOEXEC) == 0, "mutate: cannot create a pipe: " << std::strerror(errno));
  std::cout.flush(), std::cerr.flush();
  const pid_t pid = ::fork();
  MOE_CHECK(pid >= 0, "mutate: cannot fork: " << std::strerror(errno));
  if (pid == 0) {
    ::close(p[0]);
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    if (!trace_times()) ::dup2(null, 2);  // MOE_TRACE_TIMES: the child's phases on our stderr
    run_child(m, u, job, cases, ops, opt, p[1]);
  }
  ::close(p[1]);
  Child c;
  c.pid = pid, c.fd = p[0], c.job = std::move(job);
  return c;
}

// Reads a child's messages; false at end of file.
bool read_child(Child& c) {
  char buf[65536];
  const ssize_t n = ::read(c.fd, buf, sizeof buf);
  if (n < 0) return errno == EINTR || errno == EAGAIN;
  if (n == 0) return false;
  c.buf.append(buf, size_t(n));
  for (size_t nl; (nl = c.buf.find('\n')) != std::string::npos;) {
    const json j = json::parse(c.buf.substr(0, nl));
    c.buf.erase(0, nl + 1);
    if (j.contains("start")) {
      c.current = result_from_json(j["start"]), c.steps = j["steps"].get<int>();
      c.cpu_driver = j.value("cpu_driver", false);
      c.in_case = true;
      c.watch.start();
    } else {
      c.last = j, c.in_case = false, c.finished = true;
    }
  }
  return true;
}

// A finished child's outcome, as the failing case's result (Fail) or nothing (all passed).
struct Outcome {
  bool failed = false;
  CaseResult failure;
  int cases = 0;
  double max_budget = 0;
  uint32_t min_subgroup = 0, max_subgroup = 0;
  std::string error;  // the child could not run at all (bad input)
};

Outcome outcome_of(const Child& c, int status) {
  Outcome o;
  if (c.finished && c.last.contains("pass")) {
    o.cases = c.last["pass"].get<int>(), o.max_budget = c.last.value("max_budget", 0.0);
    o.min_subgroup = c.last.value("min_subgroup", 0u), o.max_subgroup = c.last.value("max_subgroup", 0u);
    return o;
  }
  if (c.finished && c.last.contains("fail")) {
    o.failed = true, o.failure = result_from_json(c.last["fail"]), o.cases = c.last["cases"].get<int>();
    o.min_subgroup = o.max_subgroup = c.last.value("subgroup", 0u);  // the killing case's
    return o;
  }
  if (c.finished && c.last.contains("error")) {
    o.error = c.last["error"].get<std::string>();
    return o;
  }
  o.failed = true, o.failure = c.current;
  if (c.hung) {
    o.failure.error = "hung: no result within the case's time limit; the child was killed";
  } else if (WIFSIGNALED(status)) {
    o.failure.error = "the child running this case was killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
                      strsignal(WTERMSIG(status)) + ")";
  } else {
    o.failure.error = "the child running this case exited with code " + std::to_string(WEXITSTATUS(status));
  }
  if (!c.in_case) o.failure.error = "outside any case: " + o.failure.error;
  return o;
}

// A GPU is shared by the children: a mutant that hangs it can make the driver report the device
// lost to every process using it (NVIDIA 580, 2026-11-24: vkCreateDevice answered ErrorDeviceLost
// in a neighbour). Such an outcome is no evidence against the mutant that saw it.
bool device_lost(const Outcome& o) {
  const auto has = [](const std::string& s) {
    return s.find("DeviceLost") != std::string::npos || s.find("cannot open device") != std::string::npos;
  };
  return has(o.error) || (o.failed && has(o.failure.error));
}

void apply(MutantResult& mr, const Outcome& o) {
  mr.cases = o.cases, mr.max_budget = o.max_budget;
  mr.min_subgroup = o.min_subgroup, mr.max_subgroup = o.max_subgroup;
  if (!o.failed) {
    // No case ran a kernel it changes (e.g. a variant the device's subgroup size never selects):
    // not judged, rather than a survivor of nothing.
    mr.status = o.cases == 0 ? MutantStatus::NotRun : MutantStatus::Survived;
    if (o.cases == 0) mr.evidence = "no case of the selected shapes runs a kernel this mutant changes";
    return;
  }
  mr.criterion = criterion_of(o.failure);
  mr.status = mr.criterion == "timeout" ? MutantStatus::TimedOut : MutantStatus::Killed;
  mr.evidence = first_reason(o.failure);
  // The driver's compile outlasted the limit, alone and with five times it: the mutant never ran,
  // so the gate was not tested on it (a GPU's driver compiles before any limit starts).
  if (mr.criterion == "compile_timeout") mr.status = MutantStatus::NotCompiled;
}

void kill_children(std::vector<Child>& active) {
  for (Child& c : active) {
    ::kill(c.pid, SIGKILL), ::close(c.fd);
    while (::waitpid(c.pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  active.clear();
}

// Runs the jobs of one unit, `jobs` children at a time. The baseline (result SIZE_MAX) must pass:
// where it does not, the rest is stopped and the reason returned (empty: it passed).
std::string run_jobs(Manifest& m, const Unit& u, std::deque<Job> queue, const CaseSets& cases,
                     const std::vector<std::string>& ops, const MutateOptions& opt, MutateReport& rep) {
  std::vector<Child> active;
  bool alone = false;  // a job that must run by itself is running
  while (!queue.empty() || !active.empty()) {
    while (!alone && int(active.size()) < std::max(1, opt.jobs) && !queue.empty()) {
      if (queue.front().alone && !active.empty()) break;  // it waits for the others to finish
      alone = queue.front().alone;
      active.push_back(start_child(m, u, std::move(queue.front()), cases, ops, opt));
      queue.pop_front();
    }
    std::vector<pollfd> fds;
    for (const Child& c : active) fds.push_back({c.fd, POLLIN, 0});
    ::poll(fds.data(), fds.size(), 500);
    if (g_stop) {
      kill_children(active);
      rep.interrupted = true;
      return "";
    }
    for (size_t i = active.size(); i-- > 0;) {
      Child& c = active[i];
      bool open = true;
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) open = read_child(c);
      // Each step's dispatch, the driver's compile of the new pipelines, a minute for the host.
      const uint64_t t = timeout_of(c.job, opt);
      const auto limit = std::chrono::milliseconds(int64_t(t) * c.steps + int64_t(vk::compile_limit_ms(t)) + 60000);
      if (c.in_case && !c.hung && c.watch.hangs(c.pid, limit, c.cpu_driver)) ::kill(c.pid, SIGKILL), c.hung = true;
      if (open) continue;
      ::close(c.fd);
      int status = 0;
      while (::waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
      }
      const Outcome o = outcome_of(c, status);
      if (c.job.alone) alone = false;
      // A lost device: the job again, alone; lost in three runs alone (5 s apart, for the driver
      // to recover), the job itself loses it.
      if (device_lost(o) && c.job.alone) ++c.job.lost;
      if (device_lost(o) && c.job.lost < 3) {
        if (!opt.quiet)
          std::cerr << "mutate: " << u.name << ": device lost "
                    << (c.job.alone ? "again, alone" : "beside other mutants") << "; running it again alone\n";
        if (c.job.alone) std::this_thread::sleep_for(std::chrono::seconds(5));
        c.job.alone = true;
        queue.push_front(std::move(c.job));
        active.erase(active.begin() + std::ptrdiff_t(i));
        continue;
      }
      // A timeout, the baseline's or a mutant's: a hang, or slow? Again, alone, with a longer limit.
      if (o.failed && !c.job.confirm &&
          (criterion_of(o.failure) == "timeout" || criterion_of(o.failure) == "compile_timeout")) {
        c.job.confirm = c.job.alone = true;
        queue.push_front(std::move(c.job));
        active.erase(active.begin() + std::ptrdiff_t(i));
        continue;
      }
      if (c.job.result == SIZE_MAX) {
        std::string bad;
        if (!o.error.empty()) bad = o.error;
        else if (o.failed)
          bad = "the unmutated kernel '" + o.failure.kernel + "' fails a case, so no kill would mean anything: " +
                first_reason(o.failure);
        if (!bad.empty()) {
          active.erase(active.begin() + std::ptrdiff_t(i));  // its fd is closed, its child reaped
          kill_children(active);
          return bad;
        }
        rep.baseline_cases += o.cases;
      } else {
        MOE_CHECK(o.error.empty() || device_lost(o), "mutate: '" << u.name << "': " << o.error);
        apply(rep.mutants[c.job.result], o);
        if (device_lost(o)) {  // lost three times while running alone: the mutant hangs the device
          MutantResult& mr = rep.mutants[c.job.result];
          mr.status = MutantStatus::Killed, mr.criterion = "device_lost";
          mr.evidence = "the device was lost each time it ran alone: " + (o.error.empty() ? first_reason(o.failure) : o.error);
        }
      }
      active.erase(active.begin() + std::ptrdiff_t(i));
    }
  }
  return "";
}

// Kernel `k` compiled with `text` in place of the unit's file (its own source, or an #include).
std::vector<uint32_t> compile_with(const KernelEntry& k, const Unit& u, const std::string& text, bool optimize) {
  if (k.source_path == u.path) return compile_glsl(text, k.source_path, k, optimize);
  KernelEntry over = k;
  over.files = std::make_shared<const SourceFiles>(k.files, u.path, text);
  return compile_glsl(k.files->read(k.source_path, "mutate: the kernel's GLSL"), k.source_path, over, optimize);
}

// A mutant in the default value of a specialization constant that every kernel of the unit sets
// in the manifest: the default is never used, so the mutant cannot change anything. Returns the
// constant's id, or -1.
int specialised_away(const Manifest& m, const Unit& u, const std::string& text, const Mutant& mu) {
  std::istringstream in(text);
  std::string line;
  for (int n = 0; n < mu.line && std::getline(in, line); ++n) {
  }
  static const std::regex decl(R"(layout\s*\([^)]*\bconstant_id\s*=\s*(\d+)[^)]*\)\s*const\b[^=;]*=)");
  std::smatch hit;
  if (!std::regex_search(line, hit, decl) || mu.column - 1 < hit.position(0) + hit.length(0)) return -1;
  const uint32_t id = uint32_t(std::stoul(hit[1].str()));
  for (size_t ki : u.kernels) {
    const auto& spec = m.kernels[ki].specialization;
    if (std::none_of(spec.begin(), spec.end(), [&](const SpecEntry& e) { return e.id == id; })) return -1;
  }
  return int(id);
}

// One mutant compiled for every kernel of its unit (compile_mutants' parallel part).
struct Compiled {
  int specialised = -1;                       // >= 0: in the default of this constant_id; nothing compiled
  std::vector<std::vector<uint32_t>> optimized, spirv;  // per kernel; spirv empty where unchanged
  std::string error;                          // did not compile or reflect
};

Compiled compile_mutant(const Manifest& m, const Unit& u, const std::string& text, const Mutant& mu,
                        const std::vector<std::vector<uint32_t>>& original) {
  Compiled c;
  if ((c.specialised = specialised_away(m, u, text, mu)) >= 0) return c;
  try {
    for (size_t i = 0; i < u.kernels.size(); ++i) {
      const KernelEntry& k = m.kernels[u.kernels[i]];
      KernelEntry check = k;
      check.spirv = compile_with(k, u, mu.source, false);
      reflect_and_check(check, "mutant");
      c.optimized.push_back(compile_with(k, u, mu.source, true));
      c.spirv.push_back(c.optimized.back() != original[i] ? std::move(check.spirv) : std::vector<uint32_t>{});
    }
  } catch (const Error& e) {
    c.error = std::string(e.what()).substr(0, 300);
  }
  return c;
}

// Compiles the unit's mutants for each of its kernels (`threads` at once); drops those that do
// not compile or reflect for one of them, those in a specialised-away default, and those whose
// optimized SPIR-V equals, for every kernel, the original's or an earlier mutant's (in mutant
// order, so the result does not depend on the threads). Returns the jobs to run.
std::deque<Job> compile_mutants(const Manifest& m, const Unit& u, const std::string& text, std::vector<Mutant> mutants,
                                int threads, MutateReport& rep) {
  using Modules = std::vector<std::vector<uint32_t>>;  // optimized, one per kernel of the unit
  Modules original;
  for (size_t ki : u.kernels) original.push_back(compile_with(m.kernels[ki], u, text, true));
  std::vector<Compiled> compiled(mutants.size());
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < std::max(1, threads); ++t)
    pool.emplace_back([&] {
      for (size_t i; (i = next++) < mutants.size();) compiled[i] = compile_mutant(m, u, text, mutants[i], original);
    });
  for (std::thread& t : pool) t.join();
  std::deque<Job> jobs;
  std::map<Modules, std::string> seen;  // -> who had them
  seen[original] = "the original";
  for (size_t i = 0; i < mutants.size(); ++i) {
    Compiled& c = compiled[i];
    MutantResult mr;
    mr.kernel = u.name, mr.mutant = std::move(mutants[i]);
    if (c.specialised >= 0) {
      mr.status = MutantStatus::Identical;
      mr.evidence = "specialised away: the default of constant_id " + std::to_string(c.specialised) +
                    ", which the manifest sets for every kernel using this file";
    } else if (!c.error.empty()) {
      mr.status = MutantStatus::NotCompiled, mr.evidence = c.error;
    } else if (auto [it, fresh] = seen.emplace(std::move(c.optimized), mr.mutant.id()); !fresh) {
      mr.status = it->second == "the original" ? MutantStatus::Identical : MutantStatus::Duplicate;
      mr.evidence = "optimized SPIR-V equals " + it->second;
    }
    const bool run = mr.status == MutantStatus::Survived;  // not dropped
    if (run) mr.status = MutantStatus::NotRun;             // until its child reports
    rep.mutants.push_back(std::move(mr));
    if (run) jobs.push_back({rep.mutants.size() - 1, std::move(c.spirv)});
  }
  return jobs;
}

// The units of the selected kernels: each kernel's own source, then each "mutate_includes" file
// one of them #includes. A unit is named after its kernel when that kernel alone uses the file as
// its own source, else after the file (its path where two files share a name).
std::vector<Unit> make_units(const Manifest& m, const std::vector<size_t>& selected) {
  std::vector<Unit> units;
  const auto add = [&](const std::string& path, size_t ki) {
    const KernelEntry& k = m.kernels[ki];
    auto it = std::find_if(units.begin(), units.end(), [&](const Unit& u) { return u.path == path && u.files == k.files; });
    if (it == units.end()) it = units.insert(units.end(), Unit{"", path, k.files, {}});
    if (!std::count(it->kernels.begin(), it->kernels.end(), ki)) it->kernels.push_back(ki);
  };
  for (size_t ki : selected) add(m.kernels[ki].source_path, ki);
  if (!m.mutate_includes.empty())
    for (size_t ki : selected) {
      const KernelEntry& k = m.kernels[ki];
      const std::set<std::string> inc =
          glsl_includes(k.files->read(k.source_path, "mutate: the kernel's GLSL"), k.source_path, k);
      for (const std::string& path : m.mutate_includes)
        if (inc.count(path)) add(path, ki);
    }
  std::map<std::string, int> uses;
  for (Unit& u : units) {
    const KernelEntry& first = m.kernels[u.kernels[0]];
    u.name = u.kernels.size() == 1 && first.source_path == u.path ? first.name : fs::path(u.path).filename().string();
    ++uses[u.name];
  }
  for (Unit& u : units)
    if (uses[u.name] > 1) u.name = u.path;
  return units;
}

// A unit whose mutants cannot be judged: no case of the selected shapes ran its kernels (`bad`
// empty; they "survived" nothing), or its unmutated kernels fail (`bad`: then no kill means
// anything). Its mutants are NotRun rather than counted against the kill rate.
void not_judged(const Unit& u, MutateReport& rep, const std::string& bad) {
  (bad.empty() ? rep.no_cases : rep.baseline_fails).push_back(bad.empty() ? u.name : u.name + ": " + bad);
  for (MutantResult& mr : rep.mutants)
    if (mr.kernel == u.name && mr.status != MutantStatus::Identical && mr.status != MutantStatus::Duplicate &&
        mr.status != MutantStatus::NotCompiled)
      mr.status = MutantStatus::NotRun, mr.criterion.clear(),
      mr.evidence = bad.empty() ? "no case of the selected shapes runs the unit's kernels" : "the unit's baseline fails";
}

void apply_claims(const std::string& path, MutateReport& rep) {
  if (!path.empty()) apply_claims_text(path, read_text(path), rep);
}

// The claims about the bundled kernels travel in the binary (compare/mutate/equivalent/*.json,
// embedded as "equivalent/<file>"), so mutating the bundled kernels applies them by default.
void apply_bundled_claims(MutateReport& rep) {
  for (const auto& [name, bytes] : bundled_files())
    if (name.starts_with("equivalent/"))
      apply_claims_text("compare/mutate/" + name, std::string(bytes.begin(), bytes.end()), rep);
}

// Claims files, or folders of them (every *.json, in name order: one file per kernel group).
void apply_claim_files(const std::vector<std::string>& paths, MutateReport& rep) {
  for (const std::string& path : paths) {
    if (!fs::is_directory(path)) {
      apply_claims(path, rep);
      continue;
    }
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(path))
      if (e.path().extension() == ".json") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) apply_claims(f.string(), rep);
  }
}

}  // namespace

MutateReport run_mutate(const MutateOptions& opt) {
  const bool bundled = opt.kernels.empty() || opt.kernels == "bundled";
  struct Handlers {  // SIGINT/SIGTERM end the run with a report of what finished
    void (*old_int)(int) = std::signal(SIGINT, on_stop);
    void (*old_term)(int) = std::signal(SIGTERM, on_stop);
    ~Handlers() { std::signal(SIGINT, old_int), std::signal(SIGTERM, old_term); }
  } handlers;
  g_stop = 0;
  MOE_CHECK(!bundled || opt.kernels_root.empty(), "mutate: --kernels-root needs --kernels (an engine's manifest)");
  Manifest m = bundled ? load_bundled_manifest(true) : load_manifest(opt.kernels, nullptr, file_system(), opt.kernels_root);
  const std::vector<std::string> want_ops = split_commas(opt.ops), want_kernels = split_commas(opt.only_kernels);
  std::map<std::string, std::set<std::string>> listed;
  if (!opt.mutants.empty()) listed = read_mutant_list(opt.mutants);
  MutateReport rep;
  std::vector<size_t> selected;
  for (size_t ki = 0; ki < m.kernels.size(); ++ki) {
    const KernelEntry& k = m.kernels[ki];
    if (!want_kernels.empty() && std::find(want_kernels.begin(), want_kernels.end(), k.name) == want_kernels.end())
      continue;
    const std::vector<std::string> ops = ops_of(m, k);
    if (!want_ops.empty() && std::none_of(ops.begin(), ops.end(), [&](const std::string& o) {
          return std::find(want_ops.begin(), want_ops.end(), o) != want_ops.end();
        }))
      continue;
    if (!k.from_glsl) {
      rep.no_source.push_back(k.name);
      continue;
    }
    if (!ops.empty()) selected.push_back(ki);  // else no op with cases uses it
  }
  const std::vector<Unit> units = make_units(m, selected);
  const Shard sh = parse_shard_text(opt.shard, "mutate: --shard");
  const size_t shard = size_t(sh.index), shards = size_t(sh.count);
  size_t order = 0;             // a mutant's index in the whole run's order
  std::vector<char> elsewhere;  // per rep.mutants entry: another shard's
  CaseSets cases;
  for (size_t ui = 0; ui < units.size(); ++ui) {
    if (g_stop) {
      rep.interrupted = true;
      break;
    }
    const Unit& u = units[ui];
    if (!opt.mutants.empty() && !listed.count(u.name)) continue;  // none listed: no cases to build
    // Cases once per (op, conventions) of the plans that use the unit's kernels, kept while the
    // next units use them.
    std::set<CaseKey> need;
    const std::vector<std::string> ops = unit_ops(m, u, need);
    std::erase_if(cases, [&](const auto& kv) { return !need.count(kv.first); });
    for (const CaseKey& key : need)
      if (!cases.count(key))
        for (int s = 0; s < opt.seeds; ++s)
          for (OpCase& c : make_cases(key.first, opt.shapes, opt.seed + uint64_t(s), "", key.second, u.name))
            cases[key].push_back(std::move(c));
    const std::string text = u.files->read(u.path, "mutate: the GLSL of '" + u.name + "'");
    std::vector<Mutant> made = make_mutants(text, split_commas(opt.rules));
    if (!opt.mutants.empty()) {
      std::set<std::string>& ids = listed[u.name];
      std::erase_if(made, [&](const Mutant& mu) { return !ids.erase(mu.id()); });
      for (const std::string& id : ids) rep.not_found.push_back(u.name + " " + id);
      listed.erase(u.name);
    }
    // The sample's seed: the kernel's index for a kernel's own file (as before units existed).
    const uint64_t sample_seed = opt.sample_seed + (u.name == m.kernels[u.kernels[0]].name ? u.kernels[0] : m.kernels.size() + ui);
    std::deque<Job> jobs =
        compile_mutants(m, u, text, sample_mutants(std::move(made), opt.max_per_kernel, sample_seed), opt.jobs, rep);
    for (size_t i = elsewhere.size(); i < rep.mutants.size(); ++i) elsewhere.push_back(order++ % shards != shard);
    std::erase_if(jobs, [&](const Job& j) { return elsewhere[j.result]; });
    // None of this shard's mutants runs here: no baseline either, but in shard 0, which runs every
    // unit's baseline as one run would (its cases and its verdict are the unit's).
    if (shard != 0 && jobs.empty()) continue;
    // The unmutated kernels first and alone: they must pass, and a neighbour that hangs the GPU
    // must not fail them (NVIDIA, 16 jobs: a baseline timed out beside hanging mutants).
    jobs.push_front({SIZE_MAX, {}, true});
    if (!opt.quiet)
      std::cerr << "mutate: " << u.name << " (" << u.kernels.size() << (u.kernels.size() == 1 ? " kernel" : " kernels")
                << "): " << jobs.size() - 1 << " mutants to run\n";
    const int64_t before = rep.baseline_cases;
    const std::string bad = run_jobs(m, u, std::move(jobs), cases, ops, opt, rep);
    rep.baseline_units[u.name] = rep.baseline_cases - before;
    if (!bad.empty()) {
      if (!opt.quiet) std::cerr << "mutate: " << u.name << ": not judged: " << bad << "\n";
      not_judged(u, rep, bad);
    } else if (rep.baseline_cases == before && !rep.interrupted) {
      not_judged(u, rep, "");
    }
  }
  for (const auto& [kernel, ids] : listed)
    for (const std::string& id : ids) rep.not_found.push_back(kernel + " " + id);
  rep.bundled = bundled;
  if (shards > 1) {  // this shard's mutants only; the claims are applied to the merged run
    std::vector<MutantResult> mine;
    for (size_t i = 0; i < rep.mutants.size(); ++i)
      if (!elsewhere[i]) mine.push_back(std::move(rep.mutants[i]));
    rep.mutants = std::move(mine);
    rep.shard = std::to_string(shard) + "/" + std::to_string(shards);
    return rep;
  }
  if (bundled && opt.bundled_claims) apply_bundled_claims(rep);
  apply_claim_files(opt.equivalent, rep);
  return rep;
}

int mutate_command(const MutateOptions& opt) {
  MutateReport rep;
  if (opt.rescore.empty()) {
    rep = run_mutate(opt);
  } else {  // the earlier run's results (or its shards' merged), scored with these claims only
    if (opt.rescore.size() == 1) rep = read_mutate_json(opt.rescore[0]);
    if (opt.rescore.size() > 1 || !rep.shard.empty()) rep = merge_mutate_shards(opt.rescore);
    for (MutantResult& m : rep.mutants)
      if (m.status == MutantStatus::Equivalent) m.status = MutantStatus::Survived, m.why.clear();
    if (rep.bundled && opt.bundled_claims) apply_bundled_claims(rep);
    apply_claim_files(opt.equivalent, rep);
  }
  write_mutate_console(std::cout, rep);
  if (!opt.json.empty())
    write_stream_atomic(opt.json, "the mutate JSON report", [&](std::ostream& os) { write_mutate_json(os, rep); });
  if (!opt.html.empty())
    write_stream_atomic(opt.html, "the mutate HTML report", [&](std::ostream& os) { write_mutate_html(os, rep); });
  const auto stats = kill_stats(rep);
  const auto all = stats.find("all");
  // A gate (--min-kill-rate) fails below its rate, and where a unit was not judged at all.
  const bool below = all != stats.end() && all->second.kill_rate() < opt.min_kill_rate;
  const bool gate_failed = opt.min_kill_rate > 0 && (below || !rep.no_cases.empty());
  return rep.interrupted || gate_failed || !rep.baseline_fails.empty() ? 1 : 0;
}

}  // namespace moe::compare
