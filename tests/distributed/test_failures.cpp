// How a distributed run ends when something goes wrong, in the parts that do
// not need several processes (tests/cli/test_dist.sh runs the processes):
// the configuration-mismatch message names both values; launch's grace
// periods keep a stopped rank's run within about 2 x dist.timeout; the run
// log's heartbeat is written and read back, and a `running` log is shown as
// dead only once its heartbeat is stale.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <ctime>
#include <map>
#include <string>

#include "distributed/dist_engine.h"
#include "distributed/launch.h"
#include "runlog/export.h"
#include "runlog/runlog.h"
#include "tests/runlog/runlog_scratch.h"

namespace sd = slowpipe::dist;
namespace ss = slowpipe::sim;

TEST_CASE("config_differences: names each differing key with both values") {
  const std::string rank0 = "a=1\nb=x\nc=3\n";
  CHECK(sd::config_differences(rank0, rank0).empty());
  CHECK(sd::config_differences("a=1\nb=y\nc=3\n", rank0) == "b=y (rank 0: x)");
  SECTION("keys one side lacks") {
    CHECK(sd::config_differences("a=1\nb=x\n", rank0) == "c=(unset) (rank 0: 3)");
    CHECK(sd::config_differences("a=1\nb=x\nc=3\nd=4\n", rank0) == "d=4 (rank 0: (unset))");
  }
  SECTION("several, in key order") {
    CHECK(sd::config_differences("a=2\nb=x\nc=4\n", rank0) == "a=2 (rank 0: 1); c=4 (rank 0: 3)");
  }
  SECTION("a value that holds '='") {
    CHECK(sd::config_differences("a=1\nb=k=v\nc=3\n", rank0) == "b=k=v (rank 0: x)");
  }
}

TEST_CASE("launch grace periods: a stopped rank's run ends within about 2 x dist.timeout") {
  for (double timeout_s : {3.0, 5.0, 30.0, 120.0}) {
    INFO("dist.timeout " << timeout_s);
    // Detection takes dist.timeout; rank 0 then ends at once, and launch
    // kills what is left after end_grace_s.
    CHECK(timeout_s + sd::end_grace_s(timeout_s) <= 2 * timeout_s);
    // A rank that ends within one heartbeat (<= 1 s) after rank 0 is never killed.
    CHECK(sd::end_grace_s(timeout_s) >= 2);
    // Rank 0 waits up to dist.timeout + 2 s for a reason before it logs: it is
    // never killed before.
    CHECK(sd::failed_grace_s(timeout_s) > timeout_s + 2);
  }
}

namespace {

std::map<std::string, std::string> running_since(const std::string& beat) {
  return {{"status", "running"}, {"heartbeat", beat}};
}

}  // namespace

TEST_CASE("display_status: a running log is qualified only once its heartbeat is stale") {
  unsetenv("SLOWPIPE_HEARTBEAT_STALE_S");
  const std::string beat = "2026-11-25T21:50:03Z";
  const double at = 1795643403;  // that time, seconds since 1970 (UTC)
  SECTION("fresh: as logged") {
    CHECK(slowpipe::runlog::display_status(running_since(beat), 0, at + 10) == "running");
    CHECK(slowpipe::runlog::display_status(running_since(beat), 0, at + slowpipe::runlog::kHeartbeatStale_s) == "running");
  }
  SECTION("stale: the time and the age") {
    CHECK(slowpipe::runlog::display_status(running_since(beat), 0, at + 75) ==
          "running (no heartbeat since 2026-11-25T21:50:03Z, 75 s ago)");
  }
  SECTION("a run with long steps gets 3 x its longest step") {
    CHECK(slowpipe::runlog::display_status(running_since(beat), 40, at + 100) == "running");
    CHECK(slowpipe::runlog::display_status(running_since(beat), 40, at + 121) ==
          "running (no heartbeat since 2026-11-25T21:50:03Z, 121 s ago)");
  }
  SECTION("finished runs, logs without a heartbeat, damaged values: as logged") {
    auto done = running_since(beat);
    done["status"] = "failed";
    CHECK(slowpipe::runlog::display_status(done, 0, at + 1e6) == "failed");
    CHECK(slowpipe::runlog::display_status({{"status", "running"}}, 0, at + 1e6) == "running");
    CHECK(slowpipe::runlog::display_status(running_since("yesterday"), 0, at + 1e6) == "running");
    CHECK(slowpipe::runlog::display_status({}, 0, at) == "unknown");
  }
  SECTION("SLOWPIPE_HEARTBEAT_STALE_S replaces the threshold") {
    setenv("SLOWPIPE_HEARTBEAT_STALE_S", "5", 1);
    CHECK(slowpipe::runlog::display_status(running_since(beat), 0, at + 6) ==
          "running (no heartbeat since 2026-11-25T21:50:03Z, 6 s ago)");
    CHECK(slowpipe::runlog::display_status(running_since(beat), 0, at + 4) == "running");
    unsetenv("SLOWPIPE_HEARTBEAT_STALE_S");
  }
}

