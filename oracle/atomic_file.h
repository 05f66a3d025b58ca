// Files that appear whole or not at all. Every file moeoracle writes (dumps, snapshots, reports,
// case files, fixtures, exports) goes through here, because CI reads them after a run that may
// have been killed, run out of disk, or raced another job writing the same path.
//
// One file (AtomicFile, write_file_atomic): the bytes go to a temporary file in the target's
// directory, which is fsynced, renamed over the target, and the directory fsynced. A reader sees
// the old file or the new one, never a mix; two writers of one path leave one of the two whole.
// On any failure (disk full, permission, an error reported only by fsync or close) the temporary
// is removed, an existing file at the path is left as it was, and a moe::Error names the file,
// what was being written, the step and the OS error.
//
// The temporary is anonymous where the filesystem supports it (O_TMPFILE: ext4, xfs, btrfs,
// tmpfs), so a SIGKILL while writing leaves nothing behind; it is given a name only for the
// instant between linking it and renaming it over the target. Elsewhere (or with
// MOE_ATOMIC_TMPFILE=0) it is created under a name from the start. Either way the name is
//   .<file name>.moeoracle-tmp.<pid>.<8 hex digits>
// in the target's directory, and the writer holds an flock on it: the next writer in that
// directory removes any such temporary whose lock is free (its writer is dead), so a kill leaves at
// most one behind, and only until the next write there.
//
// A target that exists and is not a regular file (/dev/stdout, a FIFO) is written in place: no
// atomicity is possible there. A symlink to a regular file is followed: the file it points to is
// replaced and the link kept. A replaced file keeps its permission bits (not its owner); a new one
// gets 0666 less the umask. The directory must be writable (the temporary is created there).
#pragma once
#include <cstdint>
#include <functional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>

namespace moe {

// Durable: fsync the file and the directory (for everything a user reads). Scratch: skip the
// fsyncs, for private temporary folders this process reads back at once; they still get a clear
// error when the disk is full, and still appear whole.
enum class Durability { Durable, Scratch };

class AtomicFile {
 public:
  // Opens the temporary for `path`; `what` names the content in messages ("the dump").
  AtomicFile(std::string path, std::string what, Durability d = Durability::Durable);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  // Without commit(): the temporary is removed and the target left as it was.
  ~AtomicFile();

  void write(const void* data, size_t bytes);
  void write(std::string_view s) { write(s.data(), s.size()); }
  // fsync, rename over the target, fsync the directory. The file is at `path` when this returns.
  void commit();

 private:
  [[noreturn]] void fail(const std::string& step, int err);
  void open_anonymous();
  void open_named();
  void discard() noexcept;

  std::string path_, what_, dir_, base_, tmp_name_;  // tmp_name_: relative to dir_, once named
  Durability durability_;
  int dir_fd_ = -1, fd_ = -1, lock_fd_ = -1;  // lock_fd_: holds the flock while fd_ is closed
  bool anonymous_ = false, in_place_ = false, done_ = false, existed_ = false, renamed_ = false;
  uint64_t written_ = 0;
};

void write_file_atomic(const std::string& path, const std::string& what, std::span<const uint8_t> bytes,
                       Durability d = Durability::Durable);
void write_file_atomic(const std::string& path, const std::string& what, std::string_view bytes,
                       Durability d = Durability::Durable);
// For writers that print to a stream (reports): the text is built in memory, then written as above.
void write_stream_atomic(const std::string& path, const std::string& what,
                         const std::function<void(std::ostream&)>& fill);

// A directory of several files (a fixture, a moeflux export), built under the temporary name
//   .<directory name>.moeoracle-tmp.<pid>.<8 hex digits>
// beside the target and published by publish():
//  - the target does not exist, or is an empty directory: one rename, so a reader sees no
//    directory or the whole one, and a kill leaves only the temporary tree (removed by the next
//    writer in that parent directory, as for files);
//  - the target is a directory with files in it: each file is renamed into it one at a time
//    (sorted by path). Mid-way a reader may see some new files beside old ones, each file whole;
//    files of the old directory that the new one lacks are left alone, as an overwrite would.
// Without publish() the temporary tree is removed.
class StagingDir {
 public:
  StagingDir(std::string target, std::string what);
  StagingDir(const StagingDir&) = delete;
  StagingDir& operator=(const StagingDir&) = delete;
  ~StagingDir();

  const std::string& path() const { return staging_; }  // write the files here (through AtomicFile)
  void publish();

 private:
  void merge_into_existing();

  std::string target_, what_, parent_, name_, tmp_, staging_;  // tmp_: staging_'s name in parent_
  int parent_fd_ = -1, lock_fd_ = -1;
  bool published_ = false;
};

// Fault injection for the tests of this file: with MOE_TEST_KILL_AT=<point>[:<n>] in its
// environment, a process kills itself with SIGKILL the n-th time (default: the first) a writer
// reaches <point>, so every outcome of a kill is produced at a known step rather than by a timed
// kill that may land anywhere. The points, in a write's order:
//   opened     AtomicFile: the temporary exists (anonymous or named), nothing written
//   written    AtomicFile::commit: every byte written, nothing synced or linked
//   named      AtomicFile::commit: the finished temporary has its name, just before the rename
//   renamed    AtomicFile::commit: the new file is in place, its directory not yet synced
//   staged     StagingDir::publish: every file of the tree written, before the tree's rename
//   published  StagingDir::publish: the tree is in place (or merged)
// Without the variable a point costs one getenv.
void kill_point(const char* point) noexcept;

// "<pid>.<8 hex digits>", different on every call (also across threads and forks): for private
// scratch folders that two runs, or two threads of one process, must not share.
std::string unique_tag();

}  // namespace moe
