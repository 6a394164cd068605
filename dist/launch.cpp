// slowpipe launch: spawn, watch and reap the workers (launch.h).
#include "dist/launch.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
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
  if (o.nproc == 0)
    throw UsageError("slowpipe launch needs --nproc N (N = pipeline.stages x pipeline.replicas)");
  for (const auto& a : o.train_args)
    if (a == "--resume") throw UsageError("slowpipe launch: distributed runs cannot --resume");
  return o;
}

int launch(const LaunchOptions& o) {
  std::error_code ec;
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec) throw std::runtime_error("cannot find the slowpipe binary (/proc/self/exe)");
  const int port = o.master_port > 0 ? o.master_port : free_port();
  std::fprintf(stderr,
               "slowpipe launch: %d workers, rendezvous %s:%d, rank = replica x stages + stage\n",
               o.nproc, o.master_addr.c_str(), port);
  std::fflush(stderr);
  struct sigaction sa {};
  sa.sa_handler = on_launch_signal;
  struct sigaction old_int {
  }, old_term{};
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);

  std::vector<pid_t> pids(static_cast<size_t>(o.nproc), -1);
  for (int r = 0; r < o.nproc; ++r) {
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
      sigaction(SIGINT, &old_int, nullptr);
      sigaction(SIGTERM, &old_term, nullptr);
      setenv("RANK", std::to_string(r).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(o.nproc).c_str(), 1);
      setenv("MASTER_ADDR", o.master_addr.c_str(), 1);
      setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      std::vector<std::string> argv_s = {exe, "train"};
      argv_s.insert(argv_s.end(), o.train_args.begin(), o.train_args.end());
      if (r > 0) argv_s.insert(argv_s.end(), {"--set", "run.progress=none"});
      std::vector<char*> argv;
      argv.reserve(argv_s.size() + 1);
      for (auto& s : argv_s) argv.push_back(s.data());
      argv.push_back(nullptr);
      ::execv(exe.c_str(), argv.data());
      std::fprintf(stderr, "slowpipe launch: cannot run %s: %s\n", exe.c_str(),
                   std::strerror(errno));
      ::_exit(127);
    }
    pids[static_cast<size_t>(r)] = pid;
  }
  std::vector<int> codes(static_cast<size_t>(o.nproc), -1);
  int running = o.nproc;
  bool forwarded = false;
  while (running > 0) {
    if (g_signal != 0 && !forwarded && codes[0] < 0) {
      ::kill(pids[0], SIGTERM);  // rank 0 ends the run after its step, and tells the others
      forwarded = true;
    }
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    for (int r = 0; r < o.nproc; ++r) {
      if (pids[static_cast<size_t>(r)] != pid) continue;
      const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      codes[static_cast<size_t>(r)] = code;
      --running;
      if (code != 0)
        std::fprintf(stderr, "slowpipe launch: rank %d exited with status %d\n", r, code);
    }
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  if (codes[0] != 0) return codes[0];
  for (int c : codes)
    if (c != 0) return c;
  return 0;
}

}  // namespace slowpipe::dist
