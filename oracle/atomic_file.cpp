#include "oracle/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>
#include <vector>

#include "core/check.h"

namespace moe {
namespace fs = std::filesystem;

namespace {

constexpr const char* kMarker = ".moeoracle-tmp.";

// "<dir>/.<base>.moeoracle-tmp.<pid>.<hex>" without the dir. Long names are cut so the whole
// stays within NAME_MAX (255).
std::string temp_name(const std::string& base) {
  std::string name(1, '.');  // appended piece by piece: GCC 12 warns (-Wrestrict) on "." + string
  name.append(base, 0, 200).append(kMarker).append(unique_tag());
  return name;
}

// The directory and file name of `path`, trailing slashes ignored ("a/b/" is "a", "b").
void split_path(const std::string& path, std::string& dir, std::string& base) {
  std::string s = path;
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  const fs::path p(s);
  dir = p.has_parent_path() ? p.parent_path().string() : std::string(1, '.');
  base = p.filename().string();
}

// O_TMPFILE needs /proc/self/fd to give the finished file a name (linkat); MOE_ATOMIC_TMPFILE=0
// turns it off (a filesystem that misbehaves with it; the tests of the named fallback).
bool anonymous_temporaries() {
  const char* env = std::getenv("MOE_ATOMIC_TMPFILE");
  if (env && std::string(env) == "0") return false;
  static const bool proc = ::access("/proc/self/fd", X_OK) == 0;
  return proc;
}

// `fd` and the entry `name` in `dir_fd` are the same inode (a cleaner did not remove the entry
// between our creating it and locking it).
bool same_inode(int fd, int dir_fd, const std::string& name) {
  struct stat a, b;
  return ::fstat(fd, &a) == 0 && ::fstatat(dir_fd, name.c_str(), &b, AT_SYMLINK_NOFOLLOW) == 0 &&
         a.st_ino == b.st_ino && a.st_dev == b.st_dev;
}

// Removes the temporaries (files and staging trees) of writers that died: every
// ".*.moeoracle-tmp.*" entry of the directory whose flock we can take. A live writer holds its
// lock until the temporary is renamed away; the kernel drops the lock of a killed one.
void remove_stale_temporaries(int dir_fd, const std::string& dir) noexcept {
  const int dup_fd = ::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
  if (dup_fd < 0) return;
  DIR* d = ::fdopendir(dup_fd);
  if (!d) {
    ::close(dup_fd);
    return;
  }
  ::rewinddir(d);
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n.size() > 1 && n[0] == '.' && n.find(kMarker) != std::string::npos) names.push_back(n);
  }
  ::closedir(d);
  for (const std::string& n : names) {
    const int fd = ::openat(dir_fd, n.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat st;
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0 && ::fstat(fd, &st) == 0) {
      std::error_code ec;
      if (S_ISDIR(st.st_mode))
        fs::remove_all(fs::path(dir) / n, ec);
      else
        ::unlinkat(dir_fd, n.c_str(), 0);
    }
    ::close(fd);
  }
}

// Writes all of `bytes`, retrying short writes and EINTR. Returns 0 or the errno.
int write_all(int fd, const void* data, size_t bytes) {
  const auto* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd, p, std::min<size_t>(bytes, size_t(1) << 30));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;
    p += n, bytes -= size_t(n);
  }
  return 0;
}

// fsync of a directory: some filesystems cannot (EINVAL); the entries are then as durable as they get.
int sync_dir(int dir_fd) { return ::fsync(dir_fd) == 0 || errno == EINVAL || errno == ENOTSUP ? 0 : errno; }

}  // namespace

void kill_point(const char* point) noexcept {
  const char* env = std::getenv("MOE_TEST_KILL_AT");
  if (!env || !*env) return;
  const std::string spec = env;
  const size_t colon = spec.find(':');
  if (spec.compare(0, colon, point) != 0) return;
  const long nth = colon == std::string::npos ? 1 : std::strtol(spec.c_str() + colon + 1, nullptr, 10);
  static std::atomic<long> hits{0};
  if (++hits == nth) ::raise(SIGKILL);
}

std::string unique_tag() {
  static std::atomic<uint64_t> counter{0};
  uint32_t r = 0;
  if (::getrandom(&r, sizeof r, GRND_NONBLOCK) != ssize_t(sizeof r))  // no entropy yet: time and a counter
    r = uint32_t(std::chrono::steady_clock::now().time_since_epoch().count()) ^ uint32_t(counter * 0x9E3779B9u);
  ++counter;
  char buf[40];
  std::snprintf(buf, sizeof buf, "%ld.%08x", long(::getpid()), unsigned(r));
  return buf;
}

// ---------------------------------------------------------------------------------------------
// AtomicFile

AtomicFile::AtomicFile(std::string path, std::string what, Durability d)
    : path_(std::move(path)), what_(std::move(what)), durability_(d) {
  if (path_.empty()) fail("the file name is empty", EINVAL);
  struct stat st;
  const bool exists = ::stat(path_.c_str(), &st) == 0;
  existed_ = exists;
  if (exists && S_ISDIR(st.st_mode)) fail("the path is a directory", EISDIR);
  // Devices, FIFOs and the names of open descriptors (/dev/stdout redirected to a file is a
  // regular file, but replacing that file would cut it off from the stream): in place.
  const bool stream = path_ == "/dev/stdout" || path_ == "/dev/stderr" || path_.starts_with("/dev/fd/") ||
                      path_.starts_with("/proc/");
  if ((exists && !S_ISREG(st.st_mode)) || stream) {
    in_place_ = true;
    fd_ = ::open(path_.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd_ < 0) fail("opening it", errno);
    return;
  }
  std::string target = path_;
  struct stat lst;
  if (exists && ::lstat(path_.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {  // keep the link, replace its file
    std::error_code ec;
    const fs::path real = fs::canonical(path_, ec);
    if (ec) fail("resolving the symbolic link", ec.value());
    target = real.string();
  }
  split_path(target, dir_, base_);
  dir_fd_ = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd_ < 0) fail("opening its directory " + dir_, errno);
  remove_stale_temporaries(dir_fd_, dir_);
  if (anonymous_temporaries()) open_anonymous();
  if (fd_ < 0) open_named();
  if (exists) ::fchmod(fd_, st.st_mode & 07777);  // a replaced file keeps its permissions
  kill_point("opened");
}

void AtomicFile::open_anonymous() {
  fd_ = ::openat(dir_fd_, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
  if (fd_ < 0) return;  // not supported here: the named temporary reports any real error
  anonymous_ = true;
  // The lock is held through a second descriptor so that closing fd_ (to see close's errors)
  // before the rename does not release it.
  lock_fd_ = ::fcntl(fd_, F_DUPFD_CLOEXEC, 0);
  if (lock_fd_ >= 0) ::flock(lock_fd_, LOCK_EX);
}

void AtomicFile::open_named() {
  for (int attempt = 0; attempt < 100; ++attempt) {
    const std::string name = temp_name(base_);
    const int fd = ::openat(dir_fd_, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno == EEXIST) continue;
    if (fd < 0) fail("creating a temporary file in " + dir_, errno);
    const int lock = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (lock >= 0) ::flock(lock, LOCK_EX);  // no locks on this filesystem: nobody can clean it either
    if (!same_inode(fd, dir_fd_, name)) {   // removed as stale before we locked it: another name
      ::close(fd);
      if (lock >= 0) ::close(lock);
      continue;
    }
    fd_ = fd, lock_fd_ = lock, tmp_name_ = name;
    return;
  }
  fail("creating a temporary file in " + dir_, EEXIST);
}

void AtomicFile::write(const void* data, size_t bytes) {
  MOE_CHECK(fd_ >= 0 && !done_, path_ << ": write to " << what_ << " after commit or failure");
  if (const int e = write_all(fd_, data, bytes)) fail("writing (after " + std::to_string(written_) + " bytes)", e);
  written_ += bytes;
}

void AtomicFile::commit() {
  MOE_CHECK(fd_ >= 0 && !done_, path_ << ": commit of " << what_ << " twice or after a failure");
  const bool durable = durability_ == Durability::Durable;
  if (in_place_) {
    const int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0) fail("closing it", errno);
    done_ = true;
    return;
  }
  kill_point("written");
  if (durable && ::fsync(fd_) != 0) fail("flushing it to disk (fsync)", errno);
  if (anonymous_) {  // give the finished file a name: only now can a kill leave it behind
    const std::string proc = "/proc/self/fd/" + std::to_string(fd_);
    for (int attempt = 0; attempt < 100 && tmp_name_.empty(); ++attempt) {
      const std::string name = temp_name(base_);
      if (::linkat(AT_FDCWD, proc.c_str(), dir_fd_, name.c_str(), AT_SYMLINK_FOLLOW) == 0)
        tmp_name_ = name;
      else if (errno != EEXIST)
        fail("linking the finished temporary file into " + dir_, errno);
    }
    if (tmp_name_.empty()) fail("linking the finished temporary file into " + dir_, EEXIST);
  }
  const int rc = ::close(fd_);  // some filesystems (NFS) report write errors only here
  fd_ = -1;
  if (rc != 0) fail("closing it", errno);
  kill_point("named");
  if (::renameat(dir_fd_, tmp_name_.c_str(), dir_fd_, base_.c_str()) != 0) fail("renaming it into place", errno);
  tmp_name_.clear();
  done_ = true;
  kill_point("renamed");
  if (durable)
    if (const int e = sync_dir(dir_fd_)) {
      renamed_ = true;
      fail("flushing its directory to disk (fsync)", e);
    }
  discard();  // closes the lock and the directory; nothing left to remove
}

void AtomicFile::discard() noexcept {
  if (fd_ >= 0) ::close(fd_);
  if (!tmp_name_.empty() && dir_fd_ >= 0) ::unlinkat(dir_fd_, tmp_name_.c_str(), 0);
  if (lock_fd_ >= 0) ::close(lock_fd_);
  if (dir_fd_ >= 0) ::close(dir_fd_);
  fd_ = lock_fd_ = dir_fd_ = -1;
  tmp_name_.clear();
}

void AtomicFile::fail(const std::string& step, int err) {
  discard();
  done_ = true;
  std::ostringstream os;
  os << path_ << ": cannot write " << what_ << ": " << step << ": " << std::strerror(err);
  if (renamed_)
    os << " (the new file is in place, but a power cut may still lose it)";
  else if (!in_place_)
    os << (existed_ ? " (nothing written; the file that was there is unchanged)" : " (nothing written)");
  throw Error(os.str());
}

AtomicFile::~AtomicFile() { discard(); }

void write_file_atomic(const std::string& path, const std::string& what, std::span<const uint8_t> bytes,
                       Durability d) {
  AtomicFile f(path, what, d);
  f.write(bytes.data(), bytes.size());
  f.commit();
}

void write_file_atomic(const std::string& path, const std::string& what, std::string_view bytes, Durability d) {
  AtomicFile f(path, what, d);
  f.write(bytes);
  f.commit();
}

void write_stream_atomic(const std::string& path, const std::string& what,
                         const std::function<void(std::ostream&)>& fill) {
  std::ostringstream os;
  fill(os);
  MOE_CHECK(os.good(), path << ": cannot write " << what << ": formatting it in memory failed");
  write_file_atomic(path, what, std::string_view(os.view()));
}

// ---------------------------------------------------------------------------------------------
// StagingDir

namespace {

[[noreturn]] void dir_fail(const std::string& target, const std::string& what, const std::string& step, int err) {
  throw Error(target + ": cannot write " + what + ": " + step + ": " + std::strerror(err));
}

}  // namespace

StagingDir::StagingDir(std::string target, std::string what) : target_(std::move(target)), what_(std::move(what)) {
  if (target_.empty()) dir_fail(target_, what_, "the directory name is empty", EINVAL);
  split_path(target_, parent_, name_);
  if (name_.empty() || name_ == "." || name_ == ".." || name_ == "/") {  // name the directory itself
    const fs::path abs = fs::absolute(target_).lexically_normal().parent_path();
    if (!abs.has_relative_path()) dir_fail(target_, what_, "refusing to build a directory at the root", EINVAL);
    parent_ = abs.parent_path().string(), name_ = abs.filename().string();
  }
  std::error_code ec;
  fs::create_directories(parent_, ec);
  if (ec) dir_fail(target_, what_, "creating its parent directory " + parent_, ec.value());
  parent_fd_ = ::open(parent_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (parent_fd_ < 0) dir_fail(target_, what_, "opening its parent directory " + parent_, errno);
  remove_stale_temporaries(parent_fd_, parent_);
  for (int attempt = 0; attempt < 100 && staging_.empty(); ++attempt) {
    const std::string tmp = temp_name(name_);
    if (::mkdirat(parent_fd_, tmp.c_str(), 0777) != 0) {
      if (errno == EEXIST) continue;
      const int e = errno;
      ::close(parent_fd_);
      dir_fail(target_, what_, "creating a temporary directory in " + parent_, e);
    }
    const int fd = ::openat(parent_fd_, tmp.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) ::flock(fd, LOCK_EX);
    if (fd >= 0 && same_inode(fd, parent_fd_, tmp)) {
      lock_fd_ = fd, tmp_ = tmp, staging_ = (fs::path(parent_) / tmp).string();
    } else if (fd >= 0) {
      ::close(fd);
    }
  }
  if (staging_.empty()) {
    ::close(parent_fd_);
    dir_fail(target_, what_, "creating a temporary directory in " + parent_, EEXIST);
  }
}

void StagingDir::publish() {
  MOE_CHECK(!published_, target_ << ": " << what_ << " published twice");
  kill_point("staged");
  // Each file was fsynced with its directory by AtomicFile: one rename makes the tree visible.
  // RENAME_NOREPLACE: an existing directory, even an empty one (someone's working directory),
  // is never replaced.
  int rc = ::renameat2(parent_fd_, tmp_.c_str(), parent_fd_, name_.c_str(), RENAME_NOREPLACE);
  if (rc != 0 && (errno == EINVAL || errno == ENOSYS)) {  // the filesystem lacks the flag
    struct stat st;
    if (::fstatat(parent_fd_, name_.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0)
      errno = EEXIST;
    else
      rc = ::renameat(parent_fd_, tmp_.c_str(), parent_fd_, name_.c_str());
  }
  if (rc == 0) {
    if (const int e = sync_dir(parent_fd_))
      dir_fail(target_, what_, "flushing " + parent_ + " to disk (fsync; the directory is in place)", e);
  } else if (errno == EEXIST || errno == ENOTEMPTY) {
    std::error_code ec;
    if (!fs::is_directory(target_, ec)) dir_fail(target_, what_, "it exists and is not a directory", ENOTDIR);
    merge_into_existing();
  } else {
    dir_fail(target_, what_, "renaming " + staging_ + " into place", errno);
  }
  published_ = true;
  kill_point("published");
  ::close(lock_fd_), ::close(parent_fd_);
  lock_fd_ = parent_fd_ = -1;
}

// The target exists: move each file in with its own rename (whole files, not a whole tree).
void StagingDir::merge_into_existing() {
  std::vector<fs::path> files;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(staging_, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (it->is_regular_file()) files.push_back(fs::relative(it->path(), staging_));
  if (ec) dir_fail(target_, what_, "listing " + staging_, ec.value());
  std::sort(files.begin(), files.end());
  std::set<fs::path> dirs;
  for (const fs::path& rel : files) {
    const fs::path dst = fs::path(target_) / rel;
    fs::create_directories(dst.parent_path(), ec);
    if (ec) dir_fail(target_, what_, "creating " + dst.parent_path().string(), ec.value());
    if (std::rename((fs::path(staging_) / rel).c_str(), dst.c_str()) != 0)
      dir_fail(target_, what_, "moving " + rel.string() + " into the existing directory (the files before it are new)",
               errno);
    dirs.insert(dst.parent_path());
  }
  for (const fs::path& d : dirs) {
    const int fd = ::open(d.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    const int e = fd < 0 ? errno : sync_dir(fd);
    if (fd >= 0) ::close(fd);
    if (e) dir_fail(target_, what_, "flushing " + d.string() + " to disk (fsync; the files are in place)", e);
  }
  fs::remove_all(staging_, ec);
}

StagingDir::~StagingDir() {
  if (!published_ && !staging_.empty()) {
    std::error_code ec;
    fs::remove_all(staging_, ec);
  }
  if (lock_fd_ >= 0) ::close(lock_fd_);
  if (parent_fd_ >= 0) ::close(parent_fd_);
}

}  // namespace moe
