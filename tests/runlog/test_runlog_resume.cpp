// RunLog::reopen, the writer side of resume: a log written (and closed, or
// killed) is reopened, its tables cut back to the resume point and appended to;
// a reader then sees exactly the kept rows followed by the new ones. A writer
// killed with SIGKILL while appending to a reopened log leaves a readable file.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>

#include "common/errors.h"
#include "runlog/runlog.h"
#include "runlog_scratch.h"

namespace fs = std::filesystem;
using slowpipe::DataError;
using slowpipe::UsageError;
using slowpipe::runlog::RunLog;

namespace {

using slowpipe::test::scratch;

// Row s of the first run and of the resumed one differ, so a stale row shows.
double first_loss(int64_t s) {
  return 1.0 / (1.0 + 0.01 * static_cast<double>(s));
}
double resumed_loss(int64_t s) {
  return 2.0 + 1.0 / (1.0 + 0.01 * static_cast<double>(s));
}

constexpr int64_t kLateFrom = 1100;  // the fw0_bytes column is declared here

// Appends train rows [from, to) with `loss`; fw0_bytes from kLateFrom on.
void append_rows(RunLog& log, int64_t from, int64_t to, double (*loss)(int64_t)) {
  for (int64_t s = from; s < to; ++s) {
    if (s == kLateFrom) log.declare("train", {{"fw0_bytes", "bytes", "bytes on boundary 0"}});
    std::map<std::string, double> row = {{"step", double(s)}, {"loss", loss(s)}};
    if (s >= kLateFrom) row["fw0_bytes"] = double(1000 + s);
    log.append("train", row);
    if (s % 100 == 0) log.append("eval", {{"step", double(s)}, {"loss", loss(s)}});
  }
}

// A first run of `rows` train rows, closed cleanly.
void first_run(const std::string& path, int64_t rows) {
  RunLog log(path, /*overwrite=*/false, /*flush_every=*/7);
  log.set_attribute("config.run.seed", "7");
  log.set_attribute("status", "running");
  log.declare("train", {{"step", "1", "optimizer step"}, {"loss", "nats", "training loss"}});
  log.declare("eval", {{"step", "1", ""}, {"loss", "nats", ""}});
  log.put_text("trace_step_1", "first");
  append_rows(log, 0, rows, first_loss);
}

// Checks the train table: rows [0, kept) of the first run, then the resumed
// rows up to `total`.
void check_train(const std::string& path, int64_t kept, int64_t total) {
  const auto train = slowpipe::runlog::read_table(path, "train");
  REQUIRE(train.rows() == size_t(total));
  REQUIRE(train.skipped.empty());
  const bool late = train.has_column("fw0_bytes");
  REQUIRE((late || total <= kLateFrom));
  REQUIRE(train.columns.size() == (late ? 3u : 2u));
  CHECK(train.columns[0].name == "step");  // declaration order survives a reopen
  CHECK(train.columns[1].name == "loss");
  CHECK(train.columns[1].description == "training loss");
  for (int64_t s = 0; s < total; ++s) {
    INFO("row " << s);
    REQUIRE(train.column("step")[s] == double(s));
    REQUIRE(train.column("loss")[s] == (s < kept ? first_loss(s) : resumed_loss(s)));
    if (late) {
      const double b = train.column("fw0_bytes")[s];
      if (s < kLateFrom) {
        REQUIRE(std::isnan(b));
      } else {
        REQUIRE(b == double(1000 + s));
      }
    }
  }
}

}  // namespace

TEST_CASE("RunLog::reopen: cut back to the resume point, append, read exactly") {
  const std::string path = scratch("reopen") + "/run.h5";
  constexpr int64_t kFirst = 2600, kKept = 1500, kTotal = 3100;
  first_run(path, kFirst);
  CHECK(slowpipe::runlog::read_row_counts(path) ==
        std::map<std::string, int64_t>{{"eval", 26}, {"train", kFirst}});
  {
    auto log = RunLog::reopen(path, {{"train", kKept}, {"eval", 15}}, /*flush_every=*/5);
    // The cut is on disk at once: a kill now would show the kept rows only.
    CHECK(slowpipe::runlog::read_row_counts(path) ==
          std::map<std::string, int64_t>{{"eval", 15}, {"train", kKept}});
    CHECK(log->rows("train") == kKept);
    CHECK(log->flushed_rows("eval") == 15);
    log->set_attribute("status", "resumed");  // a string attribute is replaced
    log->set_attribute("resumed_at", double(kKept));
    // The trainer declares its tables again on resume: idempotent.
    log->declare("train", {{"step", "1", "again"}, {"loss", "nats", ""}});
    CHECK_THROWS_AS(log->declare("train", {{"loss", "s", ""}}), UsageError);
    append_rows(*log, kKept, kTotal, resumed_loss);
    log->put_text("trace_step_1", "resumed");
  }
  check_train(path, kKept, kTotal);
  const auto eval = slowpipe::runlog::read_table(path, "eval");
  REQUIRE(eval.rows() == 31);
  CHECK(eval.column("loss")[14] == first_loss(1400));
  CHECK(eval.column("loss")[15] == resumed_loss(1500));
  const auto attrs = slowpipe::runlog::read_attributes(path);
  CHECK(attrs.at("config.run.seed") == "7");
  CHECK(attrs.at("status") == "resumed");
  CHECK(attrs.at("resumed_at") == "1500");
  CHECK(slowpipe::runlog::read_text(path, "trace_step_1") == "resumed");
}

TEST_CASE("RunLog::reopen: tables not named keep every row; new columns go last") {
  const std::string path = scratch("keep_all") + "/run.h5";
  first_run(path, 1000);  // before the late column
  {
    auto log = RunLog::reopen(path, {});
    CHECK(log->rows("train") == 1000);
    append_rows(*log, 1000, 1200, resumed_loss);  // declares fw0_bytes at 1100
  }
  check_train(path, 1000, 1200);
}

TEST_CASE("RunLog::reopen: refusals leave the file as it was") {
  const std::string dir = scratch("reopen_errors");
  const std::string path = dir + "/run.h5";
  first_run(path, 50);
  CHECK_THROWS_WITH(RunLog::reopen(path, {{"train", 51}}),
                    Catch::Contains("table 'train' has 50 rows, fewer than the 51 to keep"));
  CHECK_THROWS_AS(RunLog::reopen(path, {{"train", 51}}), DataError);
  CHECK_THROWS_AS(RunLog::reopen(path, {{"nope", 1}}), DataError);
  CHECK_THROWS_AS(RunLog::reopen(path, {{"train", -1}}), UsageError);
  CHECK_THROWS_AS(RunLog::reopen(path, {}, /*flush_every=*/0), UsageError);
  CHECK_THROWS_WITH(RunLog::reopen(dir + "/missing.h5", {}), Catch::Contains("no such file"));
  std::ofstream(dir + "/garbage.h5") << "not HDF5";
  CHECK_THROWS_WITH(RunLog::reopen(dir + "/garbage.h5", {}), Catch::Contains("not an HDF5 file"));
  check_train(path, 50, 50);
  { auto log = RunLog::reopen(path, {{"nope", 0}}); }  // nothing to keep of a missing table
  check_train(path, 50, 50);
}

namespace {

constexpr int kResumeFlushEvery = 3;

// The child: reopens `path` cut to `keep` rows and appends resumed rows
// forever, reporting flushed_rows after each flush.
[[noreturn]] void resume_until_killed(const std::string& path, int64_t keep, int report_fd) {
  try {
    auto log = RunLog::reopen(path, {{"train", keep}, {"eval", 0}}, kResumeFlushEvery);
    log->set_attribute("status", "running");
    int64_t reported = keep;
    for (int64_t s = keep;; ++s) {
      append_rows(*log, s, s + 1, resumed_loss);
      if (log->flushed_rows("train") != reported) {
        reported = log->flushed_rows("train");
        if (write(report_fd, &reported, sizeof reported) != sizeof reported) _exit(3);
      }
    }
  } catch (...) {
    _exit(2);
  }
}

}  // namespace

TEST_CASE("RunLog::reopen: SIGKILL while appending after a reopen keeps every flushed row") {
  const std::string dir = scratch("reopen_kill");
  const int64_t chunk = slowpipe::runlog::kChunkRows;
  // Resume points before and after the late column; kills before and after a
  // chunk boundary, where the datasets grow again after the close trimmed them.
  struct Case {
    int64_t first, keep, target;
  };
  for (const Case c : {Case{600, 300, 310}, Case{1200, 1000, chunk + 3},
                       Case{2100, 2050, 2 * chunk + 5}, Case{1500, 1200, 3 * chunk}}) {
    const std::string path = dir + "/run_" + std::to_string(c.keep) + ".h5";
    first_run(path, c.first);
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      close(fds[0]);
      resume_until_killed(path, c.keep, fds[1]);
    }
    close(fds[1]);
    int64_t reported = 0;
    while (reported < c.target) {
      pollfd p{fds[0], POLLIN, 0};
      if (poll(&p, 1, /*timeout_ms=*/20000) <= 0) break;
      int64_t value = 0;
      if (read(fds[0], &value, sizeof value) != sizeof value) break;
      reported = value;
    }
    kill(pid, SIGKILL);
    close(fds[0]);
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    INFO("keep " << c.keep << ", child reported " << reported << " flushed rows");
    REQUIRE(WIFSIGNALED(status));
    REQUIRE(reported >= c.target);
    const auto train = slowpipe::runlog::read_table(path, "train");
    REQUIRE(train.rows() >= size_t(reported));
    check_train(path, c.keep, int64_t(train.rows()));
    // And the killed, reopened log can itself be reopened and continued.
    const int64_t again = int64_t(train.rows()) - 1;
    {
      auto log = RunLog::reopen(path, {{"train", again}});
      append_rows(*log, again, again + 10, resumed_loss);
    }
    check_train(path, c.keep, again + 10);
  }
}
