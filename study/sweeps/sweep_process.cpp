// Child processes, folder lock and stop signals of the sweep runner (see
// sweep_process.h).
#include "study/sweeps/sweep_process.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "common/errors.h"

extern char** environ;

namespace slowpipe::study {
namespace {

volatile std::sig_atomic_t g_signals = 0;
extern "C" void on_stop_signal(int) {
  g_signals = g_signals + 1;
}

struct sigaction g_prev_int, g_prev_term;

}  // namespace

namespace {

// io.out_path opened (appended to or truncated) with io.header written; or
// io.out_fd (not ours to close) when there is no path.
int open_child_output(const ChildIo& io) {
  if (io.out_path.empty()) return io.out_fd;
  const int fd = ::open(io.out_path.c_str(),
                        O_WRONLY | O_CREAT | O_CLOEXEC | (io.append ? O_APPEND : O_TRUNC), 0644);
  if (fd < 0) throw std::runtime_error("cannot open " + io.out_path + ": " + std::strerror(errno));
  if (!io.header.empty()) {
    const std::string h = io.header + "\n";
    if (::write(fd, h.data(), h.size()) < 0) { /* the child's output still goes there */
    }
  }
  return fd;
}

// In the forked child: only async-signal-safe calls, then execve.
[[noreturn]] void exec_child(char* const* args, char* const* env, const ChildIo& io, int out_fd,
                             pid_t parent) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != parent) ::_exit(130);  // the sweep died before prctl took hold
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
  const int in_fd = ::open("/dev/null", O_RDONLY);
  if (in_fd >= 0) ::dup2(in_fd, 0);
  if (out_fd >= 0) {
    ::dup2(out_fd, 1);
    if (io.err_too) ::dup2(out_fd, 2);
  }
  if (!io.cwd.empty() && ::chdir(io.cwd.c_str()) != 0) {
    const char msg[] = "slowpipe sweep: cannot enter the sweep folder (chdir failed)\n";
    if (::write(2, msg, sizeof msg - 1) < 0) { /* nothing left to report to */
    }
    ::_exit(127);
  }
  ::execve(args[0], args, env);
  const char msg[] = "slowpipe sweep: cannot start the command (execve failed)\n";
  if (::write(2, msg, sizeof msg - 1) < 0) { /* nothing left to report to */
  }
  ::_exit(127);
}

}  // namespace

pid_t spawn_child(const std::vector<std::string>& argv, const ChildIo& io, int omp_threads) {
  // Everything the child needs is built before fork: after it only
  // async-signal-safe calls are made.
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const std::string omp = "OMP_NUM_THREADS=" + std::to_string(omp_threads);
  std::vector<char*> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "OMP_NUM_THREADS=", 16) != 0) env.push_back(*e);
  }
  env.push_back(const_cast<char*>(omp.c_str()));
  env.push_back(nullptr);
  const bool own_fd = !io.out_path.empty();
  const int out_fd = open_child_output(io);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    if (own_fd) ::close(out_fd);
    throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  }
  if (pid == 0) exec_child(args.data(), env.data(), io, out_fd, parent);
  if (own_fd) ::close(out_fd);
  return pid;
}

int exit_code_of(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

int run_child(const std::vector<std::string>& argv, const ChildIo& io, int omp_threads) {
  const pid_t pid = spawn_child(argv, io, omp_threads);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return exit_code_of(status);
}

namespace {

struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

void write_all(int fd, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;  // the log cannot take more; the terminal still gets it
    data += w;
    n -= static_cast<size_t>(w);
  }
}

// Copies `from` to `terminal` and `log_fd` until EOF, forwarding each stop
// signal to `pid` as SIGTERM.
void pump_output(int from, int log_fd, std::FILE* terminal, pid_t pid, const StopSignals& signals,
                 bool& interrupted) {
  int forwarded = 0;
  char buf[1 << 14];
  for (;;) {
    if (signals.count() > forwarded) {
      forwarded = signals.count();
      interrupted = true;
      ::kill(pid, SIGTERM);
    }
    struct pollfd p {
      from, POLLIN, 0
    };
    const int ready = ::poll(&p, 1, 200);
    if (ready <= 0) continue;  // timeout or EINTR: check the signals again
    const ssize_t n = ::read(from, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    std::fwrite(buf, 1, static_cast<size_t>(n), terminal);
    std::fflush(terminal);
    write_all(log_fd, buf, static_cast<size_t>(n));
  }
}

}  // namespace

int run_child_teed(const std::vector<std::string>& argv, const ChildIo& io, int omp_threads,
                   std::FILE* terminal, bool& interrupted) {
  interrupted = false;
  FdCloser log{::open(io.out_path.c_str(),
                      O_WRONLY | O_CREAT | O_CLOEXEC | (io.append ? O_APPEND : O_TRUNC), 0644)};
  if (log.fd < 0)
    throw std::runtime_error("cannot open " + io.out_path + ": " + std::strerror(errno));
  if (!io.header.empty()) {
    const std::string h = io.header + "\n";
    write_all(log.fd, h.data(), h.size());
  }
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    throw std::runtime_error(std::string("cannot create a pipe: ") + std::strerror(errno));
  }
  FdCloser read_end{fds[0]}, write_end{fds[1]};
  ChildIo child = io;
  child.out_path.clear();
  child.header.clear();
  child.out_fd = fds[1];
  child.err_too = true;
  std::fflush(terminal);
  StopSignals signals;
  const pid_t pid = spawn_child(argv, child, omp_threads);
  ::close(write_end.fd);  // EOF on the read end once the child is gone
  write_end.fd = -1;
  pump_output(read_end.fd, log.fd, terminal, pid, signals, interrupted);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  interrupted = interrupted || signals.count() > 0;
  return exit_code_of(status);
}

std::string self_executable() {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw std::runtime_error("cannot find the slowpipe binary (/proc/self/exe)");
  return p.string();
}

FolderLock::FolderLock(const std::string& path) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT, 0644);  // no O_CLOEXEC: children inherit it
  if (fd_ < 0)
    throw UsageError("cannot create the lock file " + path + ": " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd_);
    fd_ = -1;
    throw UsageError("another slowpipe sweep is running on this folder (it holds " + path +
                     "; runs of a killed sweep may still be stopping): wait for it to finish");
  }
}

FolderLock::~FolderLock() {
  if (fd_ >= 0) ::close(fd_);
}

StopSignals::StopSignals() {
  g_signals = 0;
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a sleep ends at once
  ::sigaction(SIGINT, &sa, &g_prev_int);
  ::sigaction(SIGTERM, &sa, &g_prev_term);
}

StopSignals::~StopSignals() {
  ::sigaction(SIGINT, &g_prev_int, nullptr);
  ::sigaction(SIGTERM, &g_prev_term, nullptr);
}

int StopSignals::count() const {
  return g_signals;
}

std::string last_lines(const std::string& path, int n) {
  std::ifstream in(path);
  std::deque<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    lines.push_back(line);
    if (static_cast<int>(lines.size()) > n) lines.pop_front();
  }
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

}  // namespace slowpipe::study
