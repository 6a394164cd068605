// sim's run-log heartbeat (sim/internal/log_tables.h): written at once and read
// back as the current time by a reader while the writer is still open.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <ctime>
#include <string>

#include "runlog/export.h"
#include "runlog/runlog.h"
#include "sim/internal/log_tables.h"
#include "tests/runlog/runlog_scratch.h"

namespace ss = slowpipe::sim;

TEST_CASE("Heartbeat: on disk at once, read back as now") {
  unsetenv("SLOWPIPE_HEARTBEAT_STALE_S");
  const std::string path = slowpipe::test::scratch("heartbeat") + "/run.h5";
  slowpipe::runlog::RunLog log(path, /*overwrite=*/false, /*flush_every=*/1000);
  log.set_attribute("status", "running");
  ss::Heartbeat heartbeat;
  const auto before = static_cast<double>(std::time(nullptr));
  heartbeat.beat(log);  // the first beat is always due
  // A reader sees it while the writer is open (no close, no flush of ours).
  const auto attrs = slowpipe::runlog::read_attributes(path);
  REQUIRE(attrs.count("heartbeat") == 1);
  CHECK(attrs.at("heartbeat").size() == 20);
  CHECK(slowpipe::runlog::display_status(path) == "running");
  // Measured from an hour later, the same heartbeat is stale.
  CHECK(slowpipe::runlog::display_status(attrs, 0, before + 3600)
            .rfind("running (no heartbeat since " + attrs.at("heartbeat") + ", ", 0) == 0);
}
