// The sweep's child processes: a foreground point's output goes to the
// terminal and to its .log alike (run_child_teed), children run in the folder
// they are given, and a stop signal reaches the child as SIGTERM.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "study/sweeps/sweep_process.h"

namespace {

namespace fs = std::filesystem;
using slowpipe::study::ChildIo;
using slowpipe::study::run_child_teed;

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string read_all(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  return out;
}

struct Scratch {
  fs::path dir = fs::temp_directory_path() / ("sweep_process_" + std::to_string(::getpid()));
  Scratch() { fs::create_directories(dir / "run"); }
  ~Scratch() { fs::remove_all(dir); }
};

}  // namespace

TEST_CASE("Sweep foreground: the child's output on the terminal and in its log") {
  Scratch s;
  ChildIo io;
  io.out_path = (s.dir / "p.log").string();
  io.header = "# header";
  io.cwd = (s.dir / "run").string();
  std::FILE* terminal = std::tmpfile();
  REQUIRE(terminal != nullptr);
  bool interrupted = true;
  const int code = run_child_teed(
      {"/bin/sh", "-c", "echo out; echo err >&2; pwd; OMP=$OMP_NUM_THREADS; echo omp=$OMP; exit 3"},
      io, 2, terminal, interrupted);
  CHECK(code == 3);
  CHECK_FALSE(interrupted);
  const std::string shown = read_all(terminal);
  std::fclose(terminal);
  const std::string want = "out\nerr\n" + fs::canonical(s.dir / "run").string() + "\nomp=2\n";
  CHECK(shown == want);
  CHECK(read_all(io.out_path) == "# header\n" + want);
  SECTION("appended when resumed") {
    io.append = true;
    io.header = "# again";
    std::FILE* t2 = std::tmpfile();
    CHECK(run_child_teed({"/bin/sh", "-c", "echo two"}, io, 1, t2, interrupted) == 0);
    std::fclose(t2);
    CHECK(read_all(io.out_path) == "# header\n" + want + "# again\ntwo\n");
  }
}

TEST_CASE("Sweep foreground: a stop signal reaches the child as SIGTERM") {
  Scratch s;
  ChildIo io;
  io.out_path = (s.dir / "p.log").string();
  std::FILE* terminal = std::tmpfile();
  // The child says when its trap is set, then waits; on SIGTERM it exits 130
  // as slowpipe train does after its checkpoint.
  std::thread stopper([&] {
    for (int i = 0; i < 500 && read_all(io.out_path).find("ready") == std::string::npos; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::kill(::getpid(), SIGINT);
  });
  bool interrupted = false;
  const int code = run_child_teed(
      {"/bin/sh", "-c",
       "trap 'echo stopping; exit 130' TERM; echo ready; while :; do sleep 0.05; done"},
      io, 1, terminal, interrupted);
  stopper.join();
  std::fclose(terminal);
  CHECK(interrupted);
  CHECK(code == 130);
  CHECK(read_all(io.out_path) == "ready\nstopping\n");
}
