// POSIX plumbing of the sweep runner: child processes tied to the sweep's
// life (run in a given folder; for --point, in the foreground with their
// output teed to the terminal and their log), the folder lock, and the
// SIGINT/SIGTERM flag. Linux (prctl).
#pragma once

#include <sys/types.h>

#include <cstdio>
#include <string>
#include <vector>

namespace slowpipe::study {

struct ChildIo {
  std::string out_path;  // the child's stdout (created; "" = inherit)
  bool append = false;   // append to out_path instead of truncating it
  bool err_too = true;   // stderr to the same file (else inherited)
  std::string header;    // a line written to out_path before the child starts
  std::string cwd;       // the child's working directory ("" = the sweep's)
  int out_fd = -1;       // with out_path "": the child's stdout (and stderr) go here
};

// Starts `argv[0]` with `argv` (execv, no PATH search), OMP_NUM_THREADS set
// to `omp_threads`, stdin from /dev/null, in its own process group, with
// PR_SET_PDEATHSIG = SIGTERM. Returns the pid; throws std::runtime_error when
// the output file cannot be opened or fork fails. A failed exec exits 127.
pid_t spawn_child(const std::vector<std::string>& argv, const ChildIo& io, int omp_threads);

// The exit code of a waitpid status: the code, or 128 + the signal.
int exit_code_of(int wait_status);

// spawn_child, then waits for it (through EINTR); returns exit_code_of.
int run_child(const std::vector<std::string>& argv, const ChildIo& io, int omp_threads);

// run_child in the foreground: the child's stdout and stderr go through a pipe
// to both `terminal` and io.out_path (created or appended to, after io.header),
// as `tee` would. While it runs, SIGINT and SIGTERM to this process are
// forwarded to the child as SIGTERM (it is in its own process group, so a
// terminal's Ctrl-C reaches this process alone); `interrupted` tells whether
// one came. Throws std::runtime_error when the pipe or the file cannot be opened.
int run_child_teed(const std::vector<std::string>& argv, const ChildIo& io, int omp_threads,
                   std::FILE* terminal, bool& interrupted);

// The absolute path of the running binary (/proc/self/exe); runtime_error if unknown.
std::string self_executable();

// Holds an exclusive flock on `path` (created) for the object's life. The
// descriptor is inherited by children, so the lock lasts until they exit.
class FolderLock {
 public:
  // Throws UsageError naming the path when another process holds the lock.
  explicit FolderLock(const std::string& path);
  ~FolderLock();
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int fd_ = -1;
};

// Counts SIGINT and SIGTERM while alive (handlers restored after).
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  int count() const;  // signals received so far
};

// The last `n` lines of a text file ("" when unreadable).
std::string last_lines(const std::string& path, int n);

}  // namespace slowpipe::study
