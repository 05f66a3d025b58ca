// Files appear whole or not at all (oracle/atomic_file.h): a writer killed with SIGKILL at any step
// (forced at each step by the MOE_TEST_KILL_AT hook, and at random moments) leaves the old file or
// the new one, byte for byte, and at most one temporary (which the next writer removes); two writers of one path leave one of the two and a reader never sees a
// mix; a full disk is an error naming the file, with the old file intact and no temporary left;
// a fixture directory appears whole or not at all.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "oracle/atomic_file.h"
#include "oracle/safetensors.h"
#include "oracle/synth.h"
#include "test_util.h"

namespace moe {
namespace {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// A fresh directory for one test, removed at its end.
struct TempDir {
  fs::path dir = fs::temp_directory_path() / ("moeoracle_atomic_test_" + unique_tag());
  TempDir() { fs::create_directories(dir); }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string operator/(const std::string& name) const { return (dir / name).string(); }
};

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The temporaries in `dir`, named as oracle/atomic_file.h says.
std::vector<std::string> temporaries(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".moeoracle-tmp.") != std::string::npos)
      out.push_back(e.path().filename().string());
  return out;
}

// Version v of a test dump: one tensor of `bytes` bytes, each v's own value, and v in the metadata.
void write_version(const std::string& path, int v, size_t bytes) {
  const std::vector<uint8_t> data(bytes, uint8_t(0x30 + v));
  write_safetensors(path, {{"payload", DType::U8, {int64_t(bytes)}, data.data()}}, {{"version", std::to_string(v)}},
                    "the test dump");
}

// Named temporaries from the start (MOE_ATOMIC_TMPFILE=0) for this scope, or the default.
struct TemporaryMode {
  explicit TemporaryMode(bool named) {
    if (named) ::setenv("MOE_ATOMIC_TMPFILE", "0", 1);
  }
  ~TemporaryMode() { ::unsetenv("MOE_ATOMIC_TMPFILE"); }
};

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// Forks a child that runs `body` until it is killed (or exits 3 on an error).
template <class F>
pid_t start_child(F&& body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    try {
      body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
      ::_exit(3);
    }
    ::_exit(0);
  }
  return pid;
}

// Kills `pid` with SIGKILL after `delay_ms` and reaps it; it must not have ended by itself.
void kill_after(pid_t pid, double delay_ms) {
  std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(delay_ms));
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the writer ended by itself, status " << status;
}

// The files under `dir`, by relative path, with their bytes.
std::map<std::string, std::string> tree(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out[fs::relative(e.path(), dir).string()] = read_file(e.path().string());
  return out;
}

// The invariants after any kill: `path` holds one of the two versions whole, and at most one
// temporary is left in its directory. Returns the version (or -1, having failed the test).
int check_after_kill(const TempDir& d, const std::string& path, const std::string (&want)[2], const std::string& what) {
  const std::string got = read_file(path);
  const int v = got == want[0] ? 0 : got == want[1] ? 1 : -1;
  EXPECT_NE(v, -1) << what << ": " << path << " is neither version (" << got.size() << " bytes)";
  EXPECT_LE(temporaries(d.dir).size(), 1u) << what << ": temporaries accumulate";
  return v;
}

// Writes both versions of a `bytes`-byte dump at `path` (v0 last) and returns their bytes.
void two_versions(const std::string& path, size_t bytes, std::string (&want)[2]) {
  for (int v = 1; v >= 0; --v) write_version(path, v, bytes), want[v] = read_file(path);
}

// A kill at each step of a write, forced by the MOE_TEST_KILL_AT hook (oracle/atomic_file.h): the
// old file stays until the rename, the new one is there from it on, and exactly the steps that hold
// a named temporary leave one behind, which the next writer removes. No timing is involved: each
// outcome is produced at its step on every run.
TEST(atomic_file, SigkillAtEachStepLeavesTheOldOrTheNewFile) {
  struct Step {
    const char* point;
    int version;                     // the file after the kill: 0 old, 1 new
    size_t anonymous_tmp, named_tmp;  // temporaries left, with O_TMPFILE and with named ones
  };
  const Step steps[] = {{"opened", 0, 0, 1}, {"written", 0, 0, 1}, {"named", 0, 1, 1}, {"renamed", 1, 0, 0}};
  for (const bool named : {false, true}) {
    TemporaryMode mode(named);
    TempDir d;
    const std::string path = d / "dump.safetensors";
    std::string want[2];
    two_versions(path, size_t(1) << 20, want);
    for (const Step& st : steps) {
      const std::string what = std::string(named ? "named" : "anonymous") + " temporaries, killed at " + st.point;
      write_version(path, 0, size_t(1) << 20);
      const pid_t pid = start_child([&] {
        ::setenv("MOE_TEST_KILL_AT", st.point, 1);
        write_version(path, 1, size_t(1) << 20);
      });
      int status = 0;
      ::waitpid(pid, &status, 0);
      ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << what << ": the writer was not killed, status "
                                                                      << status;
      EXPECT_EQ(check_after_kill(d, path, want, what), st.version) << what;
      EXPECT_EQ(temporaries(d.dir).size(), named ? st.named_tmp : st.anonymous_tmp) << what;
    }
    write_version(path, 0, size_t(1) << 20);  // the next writer removes what the last kill left
    EXPECT_TRUE(temporaries(d.dir).empty()) << "a stale temporary survived the next write";
  }
  // The n-th time a point is reached: the second of two writes dies before its rename.
  TempDir d;
  const std::string path = d / "dump.safetensors";
  std::string want[2];
  two_versions(path, 4096, want);
  const pid_t pid = start_child([&] {
    ::setenv("MOE_TEST_KILL_AT", "named:2", 1);
    write_version(path, 1, 4096);
    write_version(path, 0, 4096);
  });
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "status " << status;
  EXPECT_EQ(check_after_kill(d, path, want, "named:2"), 1);
}

// A child rewrites a 24 MB dump again and again, alternating two versions, and is killed at a
// random moment (seeded) within twice the time one write takes. Where the kill lands depends on the
// machine's load, so only the invariants are checked (each step's outcome is the test above's).
TEST(atomic_file, SigkillAtRandomMomentsKeepsTheInvariants) {
  constexpr size_t kBytes = size_t(24) << 20;
  for (const bool named : {false, true}) {
    TemporaryMode mode(named);
    TempDir d;
    const std::string path = d / "dump.safetensors";
    std::string want[2];
    two_versions(path, kBytes, want);
    const auto t0 = Clock::now();
    write_version(path, 0, kBytes);
    const double write_ms = ms_since(t0);
    std::mt19937 rng(named ? 20261126 : 1126);
    std::uniform_real_distribution<double> delay(0, 2 * write_ms);
    int saw[2] = {0, 0};
    for (int k = 0; k < 12; ++k) {
      const pid_t pid = start_child([&] {
        for (int j = k;; ++j) write_version(path, j % 2, kBytes);
      });
      kill_after(pid, delay(rng));
      const int v = check_after_kill(d, path, want, "kill " + std::to_string(k));
      if (v >= 0) ++saw[v];
    }
    write_version(path, 0, kBytes);
    EXPECT_TRUE(temporaries(d.dir).empty()) << "a stale temporary survived the next write";
    std::printf("%s temporaries: one write %.0f ms; 12 kills, file was v0 %d times, v1 %d\n",
                named ? "named" : "anonymous (O_TMPFILE)", write_ms, saw[0], saw[1]);
  }
}

// `moeoracle fixture --preset tiny --format moeflux --seed 3 --out OUT` in a child process (a fresh
// one: the fixture generator uses OpenMP, whose thread pool a forked child cannot use), killed at
// `kill_at` (MOE_TEST_KILL_AT) if that is not empty.
pid_t start_fixture_cli(const std::string& out, const char* kill_at = "") {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1), ::dup2(null, 2);
    if (*kill_at) ::setenv("MOE_TEST_KILL_AT", kill_at, 1);
    ::execl(MOE_CLI, MOE_CLI, "fixture", "--preset", "tiny", "--format", "moeflux", "--seed", "3", "--out",
            out.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

// The invariants after a fixture writer ended or was killed: the directory is absent or whole (and
// present when the writer finished), and at most one temporary is left beside it. Returns whether
// the directory is there.
bool check_fixture_after(const TempDir& d, const std::string& out, const std::map<std::string, std::string>& want,
                         int status, const std::string& what) {
  const bool finished = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  EXPECT_TRUE(finished || (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)) << what << ": status " << status;
  EXPECT_LE(temporaries(d.dir).size(), 1u) << what;
  if (!fs::exists(out)) {
    EXPECT_FALSE(finished) << what << ": the writer finished, but " << out << " is missing";
    return false;
  }
  EXPECT_TRUE(tree(out) == want) << what << ": " << out << " exists but is not the whole fixture";
  return true;
}

// The fixture's tree as a fresh run writes it.
std::map<std::string, std::string> fixture_tree(const TempDir& ref) {
  int status = 0;
  ::waitpid(start_fixture_cli(ref / "m"), &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << MOE_CLI << " fixture: status " << status;
  return tree(ref.dir / "m");
}

// Kills at the steps of a directory write (MOE_TEST_KILL_AT): before the tree's rename nothing is
// there but the staging tree, from it on the whole directory; the next writer removes the stale tree.
TEST(atomic_file, SigkillAtEachStepLeavesNoFixtureOrAWholeOne) {
  TempDir ref, d;
  const std::map<std::string, std::string> want = fixture_tree(ref);
  ASSERT_EQ(want.size(), 6u);  // model_weights.{bin,json}, packed_experts/layer_0{0..3}.bin
  struct Step {
    const char* point;
    bool whole;
  };
  // The moeflux fixture is staged with an intermediate MLX fixture inside its tree (oracle/synth.cpp),
  // a staging directory of its own: the second "staged" / "published" are the fixture's.
  // "renamed:3": the third file is in the staging tree.
  for (const Step st :
       {Step{"opened", false}, Step{"renamed:3", false}, Step{"staged:2", false}, Step{"published:2", true}}) {
    const std::string out = d / "m";
    fs::remove_all(out);
    int status = 0;
    ::waitpid(start_fixture_cli(out, st.point), &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << st.point << ": status " << status;
    EXPECT_EQ(check_fixture_after(d, out, want, status, st.point), st.whole) << st.point;
    EXPECT_EQ(temporaries(d.dir).size(), st.whole ? 0u : 1u) << st.point;
  }
  write_synthetic(synthetic_preset("tiny"), 3, d / "m2", "moeflux");  // removes the stale tree
  EXPECT_TRUE(temporaries(d.dir).empty());
  EXPECT_TRUE(tree(d.dir / "m2") == want);
}

// Kills at random moments (seeded; every 4th after the run has ended): only the invariants, since
// where a timed kill lands depends on the load.
TEST(atomic_file, SigkillAtRandomMomentsLeavesNoFixtureOrAWholeOne) {
  TempDir ref, d;
  const auto t0 = Clock::now();
  const std::map<std::string, std::string> want = fixture_tree(ref);
  const double write_ms = ms_since(t0);
  ASSERT_EQ(want.size(), 6u);
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> delay(0, write_ms);
  int whole = 0;
  for (int k = 0; k < 8; ++k) {
    const std::string out = d / "m";
    fs::remove_all(out);
    const pid_t pid = start_fixture_cli(out);
    const double ms = k % 4 == 3 ? 3 * write_ms : delay(rng);
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    whole += check_fixture_after(d, out, want, status, "kill " + std::to_string(k));
  }
  std::printf("moeflux fixture: one run %.0f ms; 8 kills: %d left the whole directory\n", write_ms, whole);
}

// Two writers of one path (threads, or processes) write their own version 8 times each while a
// reader reads the file: every read and the end result are one of the two, no writer fails.
void race(bool processes) {
  TempDir d;
  constexpr size_t kBytes = size_t(4) << 20;
  const std::string path = d / "race.safetensors";
  std::string want[2];
  for (int v = 1; v >= 0; --v) write_version(path, v, kBytes), want[v] = read_file(path);
  auto writer = [&](int v) {
    for (int i = 0; i < 8; ++i) write_version(path, v, kBytes);
  };
  std::atomic<int> running{2};
  std::vector<std::thread> threads;
  std::vector<pid_t> pids;
  for (int v = 0; v < 2; ++v) {
    if (processes) {
      pids.push_back(start_child([&, v] { writer(v); }));
      continue;
    }
    threads.emplace_back([&, v] {
      try {
        writer(v);
      } catch (const Error& e) {
        ADD_FAILURE() << e.what();
      }
      --running;
    });
  }
  int reads = 0, torn = 0, statuses[2] = {-1, -1};
  for (;;) {
    for (size_t i = 0; i < pids.size(); ++i)  // a process that ended: its status, once
      if (statuses[i] == -1 && ::waitpid(pids[i], &statuses[i], WNOHANG) == pids[i]) --running;
    if (running == 0) break;
    const std::string got = read_file(path);
    torn += got != want[0] && got != want[1];
    ++reads;
  }
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < pids.size(); ++i)
    EXPECT_TRUE(WIFEXITED(statuses[i]) && WEXITSTATUS(statuses[i]) == 0) << "writer " << i << ": " << statuses[i];
  EXPECT_EQ(torn, 0) << "of " << reads << " reads";
  const std::string got = read_file(path);
  EXPECT_TRUE(got == want[0] || got == want[1]);
  EXPECT_TRUE(temporaries(d.dir).empty());
  std::printf("%s: %d reads while writing, %d torn\n", processes ? "two processes" : "two threads", reads, torn);
}

TEST(atomic_file, TwoWritersOfOnePathLeaveOneOfTheTwo) {
  race(false);
  race(true);
}

TEST(atomic_file, FullDiskNamesTheFileAndKeepsTheOldOne) {
  TempDir d;
  if (::mount("tmpfs", d.dir.c_str(), "tmpfs", 0, "size=1m") != 0)
    GTEST_SKIP() << "cannot mount a 1 MB tmpfs at " << d.dir << " (" << std::strerror(errno)
                 << "): the full-disk case needs root and mount permission";
  struct Unmount {
    std::string dir;
    ~Unmount() { ::umount2(dir.c_str(), MNT_DETACH); }
  } unmount{d.dir.string()};
  for (const bool named : {false, true}) {
    TemporaryMode mode(named);
    const std::string path = d / "dump.safetensors";
    write_version(path, 0, 100000);
    const std::string old = read_file(path);
    test::expect_error([&] { write_version(path, 1, 2 << 20); },
                       path + ": cannot write the test dump: writing (after ");
    test::expect_error([&] { write_version(path, 1, 2 << 20); }, "No space left on device");
    EXPECT_EQ(read_file(path), old);
    EXPECT_TRUE(temporaries(d.dir).empty());
    test::expect_error([&] { write_synthetic(synthetic_preset("tiny"), 1, d / "fixture", "mlx"); },
                       "No space left on device");
    EXPECT_FALSE(fs::exists(d / "fixture"));
    EXPECT_TRUE(temporaries(d.dir).empty());
    fs::remove(path);
  }
}

TEST(atomic_file, FailedOrAbandonedWritesLeaveTheOldFile) {
  TempDir d;
  const std::string path = d / "a.txt";
  write_file_atomic(path, "the test file", std::string_view("old"));
  for (const bool named : {false, true}) {
    TemporaryMode mode(named);
    {
      AtomicFile f(path, "the test file");
      f.write(std::string_view("new, never committed"));
    }
    EXPECT_EQ(read_file(path), "old");
    EXPECT_TRUE(temporaries(d.dir).empty());
  }
  test::expect_error([&] { write_file_atomic(d / "no/such/dir/x", "the test file", std::string_view("x")); },
                     d / "no/such/dir/x" + ": cannot write the test file: opening its directory " + (d / "no/such/dir") +
                         ": No such file or directory");
  test::expect_error([&] { write_file_atomic(d.dir.string(), "the test file", std::string_view("x")); },
                     "the path is a directory");
  write_file_atomic(path, "the test file", std::string_view("newer"));
  EXPECT_EQ(read_file(path), "newer");
  EXPECT_EQ(fs::directory_iterator(d.dir)->path().filename(), "a.txt");  // nothing else there
}

TEST(atomic_file, StaleTemporariesOfDeadWritersOnly) {
  TempDir d;
  const std::string dead = d / ".x.moeoracle-tmp.1.deadbeef", live = d / ".y.moeoracle-tmp.2.cafebabe";
  std::ofstream(dead) << "left by a killed writer";
  std::ofstream(live) << "a writer at work";
  const int fd = ::open(live.c_str(), O_RDONLY | O_CLOEXEC);  // its writer's lock
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  fs::create_directory(d / ".z.moeoracle-tmp.3.00000000");  // a staging tree of a killed writer
  std::ofstream(d / ".z.moeoracle-tmp.3.00000000/f") << "x";
  write_file_atomic(d / "other", "the test file", std::string_view("x"));
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_FALSE(fs::exists(d / ".z.moeoracle-tmp.3.00000000"));
  EXPECT_TRUE(fs::exists(live));
  ::close(fd);
}

TEST(atomic_file, SymlinksAndDevices) {
  TempDir d;
  write_file_atomic(d / "real", "the test file", std::string_view("old"));
  fs::create_symlink("real", d / "link");
  write_file_atomic(d / "link", "the test file", std::string_view("new"));
  EXPECT_TRUE(fs::is_symlink(d / "link"));
  EXPECT_EQ(read_file(d / "real"), "new");
  write_file_atomic("/dev/null", "the test file", std::string_view("discarded"));  // in place
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
}

TEST(atomic_file, StagingDirPublishesWholeOrMergesIntoAnExistingOne) {
  TempDir d;
  const std::string out = d / "fix";
  write_synthetic(synthetic_preset("tiny"), 1, out, "mlx");
  const std::map<std::string, std::string> first = tree(out);
  EXPECT_EQ(first.size(), 2u);  // config.json, model.safetensors
  EXPECT_TRUE(temporaries(d.dir).empty());
  std::ofstream(d / "fix/notes.txt") << "the user's";
  write_synthetic(synthetic_preset("tiny"), 2, out, "mlx");  // an existing directory: file by file
  const std::map<std::string, std::string> second = tree(out);
  EXPECT_EQ(second.size(), 3u);
  EXPECT_EQ(second.at("notes.txt"), "the user's");
  EXPECT_NE(second.at("model.safetensors"), first.at("model.safetensors"));
  EXPECT_TRUE(temporaries(d.dir).empty());
  {
    StagingDir s(d / "abandoned", "the test directory");
    write_file_atomic(s.path() + "/f", "the test file", std::string_view("x"));
  }
  EXPECT_FALSE(fs::exists(d / "abandoned"));
  EXPECT_TRUE(temporaries(d.dir).empty());
}

}  // namespace
}  // namespace moe
