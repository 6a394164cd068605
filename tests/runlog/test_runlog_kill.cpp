// A run killed with SIGKILL leaves a readable run log holding every flushed row.
//
// A forked child writes rows (flush every 3) as fast as it can, declares a late
// column on the way, and reports each completed flush through a pipe; it never
// stops on its own. Once it has reported enough rows the parent kills it with
// SIGKILL at whatever point it has reached (often inside a flush), then reads
// the file: at least every reported row must be there with its exact values.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <filesystem>

#include "runlog/runlog.h"

namespace fs = std::filesystem;

namespace {

constexpr int64_t kLateColumnFrom = 40;
constexpr int kFlushEvery = 3;

double kill_loss_at(int64_t step) {
  return 1.0 / (1.0 + 0.01 * static_cast<double>(step));
}

// The child: writes forever, reporting flushed_rows after each flush.
[[noreturn]] void write_until_killed(const std::string& path, int report_fd) {
  try {
    slowpipe::runlog::RunLog log(path, /*overwrite=*/false, kFlushEvery);
    log.set_attribute("config.model.name", "kill-test");
    log.declare("train", {{"step", "1", ""}, {"loss", "nats", ""}});
    int64_t reported = 0;
    for (int64_t s = 0;; ++s) {
      if (s == kLateColumnFrom) log.declare("train", {{"sim_time_s", "s", ""}});
      std::map<std::string, double> row = {{"step", double(s)}, {"loss", kill_loss_at(s)}};
      if (s >= kLateColumnFrom) row["sim_time_s"] = 0.25 * double(s);
      log.append("train", row);
      if (log.flushed_rows("train") != reported) {
        reported = log.flushed_rows("train");
        if (write(report_fd, &reported, sizeof reported) != sizeof reported) _exit(3);
      }
    }
  } catch (...) {
    _exit(2);
  }
}

// Kills the child once it has reported at least `target` flushed rows.
// Returns the last count it reported (0 if it died or went quiet).
int64_t kill_after(pid_t pid, int report_fd, int64_t target) {
  int64_t reported = 0;
  while (reported < target) {
    pollfd p{report_fd, POLLIN, 0};
    if (poll(&p, 1, /*timeout_ms=*/20000) <= 0) break;
    int64_t value = 0;
    if (read(report_fd, &value, sizeof value) != sizeof value) break;
    reported = value;
  }
  kill(pid, SIGKILL);
  return reported;
}

}  // namespace

TEST_CASE("RunLog: a run killed with SIGKILL keeps every flushed row") {
  const fs::path dir = fs::path(SLOWPIPE_BINARY_DIR) / "test_runlog_tmp" / "kill";
  fs::remove_all(dir);
  fs::create_directories(dir);
  // Several targets, so kills land before and after the late column and across
  // a chunk boundary (kChunkRows rows), where the datasets grow.
  const int64_t chunk = slowpipe::runlog::kChunkRows;
  for (int64_t target : {int64_t{9}, int64_t{300}, chunk - 6, chunk + 3, 3 * chunk}) {
    const std::string path = (dir / ("run_" + std::to_string(target) + ".h5")).string();
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      close(fds[0]);
      write_until_killed(path, fds[1]);
    }
    close(fds[1]);
    const int64_t reported = kill_after(pid, fds[0], target);
    close(fds[0]);
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    INFO("target " << target << ", child reported " << reported << " flushed rows");
    REQUIRE(WIFSIGNALED(status));
    REQUIRE(WTERMSIG(status) == SIGKILL);
    REQUIRE(reported >= target);

    CHECK(slowpipe::runlog::read_attributes(path).at("config.model.name") == "kill-test");
    const auto table = slowpipe::runlog::read_table(path, "train");
    REQUIRE(table.rows() >= size_t(reported));
    REQUIRE(table.rows() % kFlushEvery == 0);  // whole flushes only, no torn rows
    const auto& step = table.column("step");
    const auto& loss = table.column("loss");
    const bool late = table.has_column("sim_time_s");
    REQUIRE((late || table.rows() <= size_t(kLateColumnFrom)));
    for (size_t s = 0; s < table.rows(); ++s) {
      INFO("row " << s);
      REQUIRE(step[s] == double(s));
      REQUIRE(loss[s] == kill_loss_at(int64_t(s)));
      if (late) {
        const double t = table.column("sim_time_s")[s];
        if (int64_t(s) < kLateColumnFrom) {
          REQUIRE(std::isnan(t));
        } else {
          REQUIRE(t == 0.25 * double(s));
        }
      }
    }
  }
}
