// slowpipe launch: spawn, watch and reap the workers (launch.h).
#include "distributed/launch.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <thread>

#include "common/errors.h"

namespace slowpipe::dist {
namespace {

volatile sig_atomic_t g_signal = 0;
extern "C" void on_launch_signal(int sig) {
  g_signal = sig;
}

int parse_count(const std::string& key, const std::string& v, int lo, int hi) {
  char* end = nullptr;
  errno = 0;
  const long x = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno != 0 || x < lo || x > hi)
    throw UsageError("bad value for " + key + ": '" + v + "' (expected an integer in [" +
                     std::to_string(lo) + ", " + std::to_string(hi) + "])");
  return static_cast<int>(x);
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    throw std::runtime_error(std::string("cannot find a free port: ") + std::strerror(errno));
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace

LaunchOptions parse_launch(const std::vector<std::string>& args) {
  LaunchOptions o;
  size_t i = 0;
  const auto value = [&](const std::string& key) {
    if (i + 1 >= args.size()) throw UsageError(key + " needs a value");
    return args[++i];
  };
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--nproc") {
      o.nproc = parse_count("--nproc", value(a), 1, 4096);
    } else if (a == "--port") {
      o.master_port = parse_count("--port", value(a), 1, 65535);
    } else if (a == "--master-addr") {
      o.master_addr = value(a);
    } else if (a == "--") {
      ++i;
      break;
    } else {
      break;
    }
  }
  o.train_args.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  for (const auto& a : o.train_args)
    if (a == "--resume" || a.rfind("--resume=", 0) == 0) o.resume = true;
  if (o.nproc == 0 && !o.resume)
    throw UsageError("slowpipe launch needs --nproc N (N = pipeline.stages x pipeline.replicas)");
  return o;
}

double end_grace_s(double timeout_s) {
  return std::clamp(timeout_s / 2, 2.0, 10.0);
}

double failed_grace_s(double timeout_s) {
  return 2 * timeout_s + 5;
}

namespace {

using Clock = std::chrono::steady_clock;
constexpr double kCleanEndExtra_s = 30;
// slowpipe train's status after SIGINT/SIGTERM, a clean end too (cli/commands.h).
constexpr int kExitInterrupted = 130;

// One worker: its pid, its stderr pipe (ranks 1..), the partial line read so
// far, and its exit code once reaped.
struct Worker {
  pid_t pid = -1;
  int err_fd = -1;
  std::string partial;
  int code = -1;
  int signal = 0;  // what ended it, if a signal did
};

// Writes the complete lines of what `w` printed, each prefixed "[rank r] ";
// at EOF (`all`) the rest too.
void forward_lines(int r, Worker& w, bool all) {
  size_t start = 0;
  for (size_t nl; (nl = w.partial.find('\n', start)) != std::string::npos; start = nl + 1)
    std::fprintf(stderr, "[rank %d] %.*s\n", r, static_cast<int>(nl - start),
                 w.partial.data() + start);
  w.partial.erase(0, start);
  if (all && !w.partial.empty()) {
    std::fprintf(stderr, "[rank %d] %s\n", r, w.partial.c_str());
    w.partial.clear();
  }
  std::fflush(stderr);
}

// Reads what the workers' pipes hold, waiting up to `wait_ms` for some.
void pump_stderr(std::vector<Worker>& workers, int wait_ms) {
  std::vector<pollfd> fds;
  std::vector<int> ranks;
  for (size_t r = 0; r < workers.size(); ++r) {
    if (workers[r].err_fd < 0) continue;
    fds.push_back({workers[r].err_fd, POLLIN, 0});
    ranks.push_back(static_cast<int>(r));
  }
  if (fds.empty()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
    return;
  }
  if (::poll(fds.data(), fds.size(), wait_ms) <= 0) return;
  for (size_t i = 0; i < fds.size(); ++i) {
    if (fds[i].revents == 0) continue;
    Worker& w = workers[static_cast<size_t>(ranks[i])];
    char buf[4096];
    const ssize_t n = ::read(w.err_fd, buf, sizeof buf);
    if (n > 0) {
      w.partial.append(buf, static_cast<size_t>(n));
      forward_lines(ranks[i], w, false);
    } else if (n == 0 || errno != EINTR) {
      forward_lines(ranks[i], w, true);
      ::close(w.err_fd);
      w.err_fd = -1;
    }
  }
}

std::string launch_id() {
  std::random_device rd;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%d-%08x%08x", static_cast<int>(::getpid()), rd(), rd());
  return buf;
}

// The signal handlers launch replaces, restored in each worker and at the end.
struct SavedSignals {
  struct sigaction int_ {};
  struct sigaction term {};
};

// The worker side of fork(): its environment and argv, then exec of
// `slowpipe train`; returns only by _exit.
[[noreturn]] void exec_worker(const LaunchOptions& o, const std::string& exe, int r, int port,
                              const std::string& id, bool piped, int err_write, pid_t group,
                              const SavedSignals& old, pid_t launcher) {
  // Dies with launch: rank 0 stops (and logs why), the others are killed.
  ::prctl(PR_SET_PDEATHSIG, r == 0 ? SIGTERM : SIGKILL);
  if (::getppid() != launcher) ::_exit(1);  // launch died before the request
  ::signal(SIGPIPE, SIG_IGN);  // launch gone, its stderr pipes broken: not a reason to die
  ::setpgid(0, group);         // out of the terminal's group: Ctrl-C reaches launch only
  sigaction(SIGINT, &old.int_, nullptr);
  sigaction(SIGTERM, &old.term, nullptr);
  if (piped) ::dup2(err_write, STDERR_FILENO);
  setenv("RANK", std::to_string(r).c_str(), 1);
  setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
  setenv("WORLD_SIZE", std::to_string(o.nproc).c_str(), 1);
  setenv("MASTER_ADDR", o.master_addr.c_str(), 1);
  setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
  setenv(kLaunchIdVar, id.c_str(), 1);
  std::vector<std::string> argv_s = {exe, "train"};
  argv_s.insert(argv_s.end(), o.train_args.begin(), o.train_args.end());
  if (r > 0) argv_s.insert(argv_s.end(), {"--set", "run.progress=none"});
  std::vector<char*> argv;
  argv.reserve(argv_s.size() + 1);
  for (auto& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);
  ::execv(exe.c_str(), argv.data());
  std::fprintf(stderr, "slowpipe launch: cannot run %s: %s\n", exe.c_str(), std::strerror(errno));
  ::_exit(127);
}

// Forks the o.nproc workers into one process group (`group`: rank 0's pid),
// their stderr piped to launch except rank 0's on a terminal.
std::vector<Worker> spawn_workers(const LaunchOptions& o, const std::string& exe, int port,
                                  const std::string& id, const SavedSignals& old, pid_t& group) {
  std::vector<Worker> workers(static_cast<size_t>(o.nproc));
  group = 0;
  const pid_t launcher = ::getpid();
  // Rank 0 writes to a terminal itself (its progress line redraws in place).
  const bool rank0_direct = ::isatty(STDERR_FILENO) != 0;
  for (int r = 0; r < o.nproc; ++r) {
    const bool piped = r > 0 || !rank0_direct;
    int err[2] = {-1, -1};
    if (piped && ::pipe2(err, O_CLOEXEC) != 0)
      throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) exec_worker(o, exe, r, port, id, piped, err[1], group, old, launcher);
    ::setpgid(pid, group);  // also here: whichever runs first
    if (group == 0) group = pid;
    Worker& w = workers[static_cast<size_t>(r)];
    w.pid = pid;
    if (piped) {
      ::close(err[1]);
      w.err_fd = err[0];
    }
  }
  return workers;
}

// Once set: when the workers left are killed, and why. The earliest
// deadline asked for wins.
struct EndDeadline {
  bool set = false;
  Clock::time_point at = Clock::now();
  std::string why;

  void end_by(double grace_s, const std::string& reason) {
    const auto t = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(grace_s * 1000));
    if (!set || t < at) {
      set = true;
      at = t;
      why = reason;
    }
  }
};

// The first SIGINT/SIGTERM asks rank 0 to end the run; a second kills all.
void handle_signal(std::vector<Worker>& workers, int running, pid_t group, int& signals_seen) {
  if (g_signal == 0) return;
  g_signal = 0;
  if (++signals_seen == 1 && workers[0].code < 0) {
    ::kill(workers[0].pid, SIGTERM);  // rank 0 ends the run after its step, and tells the others
  } else if (running > 0) {
    std::fprintf(stderr, "slowpipe launch: second signal: killing every worker\n");
    ::kill(-group, SIGKILL);
  }
}

// Kills the workers still running once the deadline has passed.
void kill_overdue(const std::vector<Worker>& workers, pid_t group, EndDeadline& deadline) {
  if (!deadline.set || Clock::now() < deadline.at) return;
  for (size_t r = 0; r < workers.size(); ++r) {
    const Worker& w = workers[r];
    if (w.code >= 0) continue;
    std::fprintf(stderr, "slowpipe launch: rank %d did not end %s (stopped or hung): killed\n",
                 static_cast<int>(r), deadline.why.c_str());
    ::kill(w.pid, SIGKILL);
  }
  ::kill(-group, SIGKILL);  // anything else left in the workers' group
  std::fflush(stderr);
  deadline.set = false;
}

// Records worker r's exit; rank 0's end or another's failure sets how long
// the others may take to follow.
void on_worker_exit(const LaunchOptions& o, int r, Worker& w, int status, EndDeadline& deadline) {
  w.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (WIFSIGNALED(status)) w.signal = WTERMSIG(status);
  if (w.code != 0)
    std::fprintf(stderr, "slowpipe launch: rank %d exited with status %d\n", r, w.code);
  char buf[160];
  if (r == 0) {
    // After a clean end the others are past the final barrier: they
    // only tear down, which a loaded machine may make slow.
    const double grace_s = end_grace_s(o.timeout_s) +
                           (w.code == 0 || w.code == kExitInterrupted ? kCleanEndExtra_s : 0);
    std::snprintf(buf, sizeof buf, "within %g s after rank 0 ended", grace_s);
    deadline.end_by(grace_s, buf);
  } else if (w.code != 0) {
    std::snprintf(buf, sizeof buf, "within %g s after rank %d failed (2 x dist.timeout + 5 s)",
                  failed_grace_s(o.timeout_s), r);
    deadline.end_by(failed_grace_s(o.timeout_s), buf);
  }
}

// Reaps the workers that have exited, without waiting.
void reap_exited(const LaunchOptions& o, std::vector<Worker>& workers, int& running,
                 EndDeadline& deadline) {
  int status = 0;
  pid_t pid;
  while (running > 0 && (pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
    for (int r = 0; r < o.nproc; ++r) {
      Worker& w = workers[static_cast<size_t>(r)];
      if (w.pid != pid) continue;
      --running;
      on_worker_exit(o, r, w, status, deadline);
    }
  }
}

// Forwards the workers' stderr and reaps them until all have exited and
// closed their pipes.
void supervise(const LaunchOptions& o, std::vector<Worker>& workers, pid_t group) {
  int running = o.nproc;
  int signals_seen = 0;
  EndDeadline deadline;
  while (running > 0 || std::any_of(workers.begin(), workers.end(),
                                    [](const Worker& w) { return w.err_fd >= 0; })) {
    handle_signal(workers, running, group, signals_seen);
    pump_stderr(workers, running > 0 ? 50 : 200);
    if (running > 0) kill_overdue(workers, group, deadline);
    reap_exited(o, workers, running, deadline);
  }
}

}  // namespace

int launch(const LaunchOptions& o, LaunchReport* report) {
  std::error_code ec;
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec) throw std::runtime_error("cannot find the slowpipe binary (/proc/self/exe)");
  const int port = o.master_port > 0 ? o.master_port : free_port();
  const std::string id = launch_id();
  std::fprintf(stderr,
               "slowpipe launch: %d workers, rendezvous %s:%d, rank = replica x stages + stage\n",
               o.nproc, o.master_addr.c_str(), port);
  std::fflush(stderr);
  struct sigaction sa {};
  sa.sa_handler = on_launch_signal;
  SavedSignals old;
  sigaction(SIGINT, &sa, &old.int_);
  sigaction(SIGTERM, &sa, &old.term);

  pid_t group = 0;  // the workers' process group: rank 0's pid
  std::vector<Worker> workers = spawn_workers(o, exe, port, id, old, group);
  supervise(o, workers, group);
  sigaction(SIGINT, &old.int_, nullptr);
  sigaction(SIGTERM, &old.term, nullptr);
  if (report != nullptr) report->rank0_signal = workers[0].signal;
  if (workers[0].code != 0) return workers[0].code;
  for (const Worker& w : workers)
    if (w.code != 0) return w.code;
  return 0;
}

}  // namespace slowpipe::dist
