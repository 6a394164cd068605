// config/logged_config.h: a run log's config.* attributes back into options,
// and the two refusals (a key of another version, a file that is no run log).
#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "common/errors.h"
#include "config/logged_config.h"
#include "config/train_config.h"

using slowpipe::OptionSet;
using slowpipe::UsageError;
using slowpipe::config::apply_logged_config;
using slowpipe::config::TrainConfig;

TEST_CASE("apply_logged_config sets the config.* attributes and only those", "[logged_config]") {
  TrainConfig cfg;
  OptionSet options;
  slowpipe::config::describe_options(cfg, options);
  const std::map<std::string, std::string> attrs = {{"config.run.seed", "7"},
                                                    {"config.compress.fw", "q4"},
                                                    {"config.net.bandwidth", "1Gbps"},
                                                    {"status", "complete"},
                                                    {"host.cpu", "x"}};
  CHECK(apply_logged_config(attrs, options, "RUN.h5") == 3);
  CHECK(cfg.run.seed == 7);
  CHECK(cfg.compress.fw.text() == "q4");
  CHECK(cfg.net.bandwidth_bps == Approx(1e9));
  CHECK(cfg.net.preset == "10Gbps");  // not in the attributes: the default stays
}

TEST_CASE("apply_logged_config refuses an unknown key and a log without configuration",
          "[logged_config]") {
  TrainConfig cfg;
  OptionSet options;
  slowpipe::config::describe_options(cfg, options);
  CHECK_THROWS_WITH(
      apply_logged_config({{"config.run.no_such_key", "1"}}, options, "--resume A.h5"),
      Catch::StartsWith("--resume A.h5: the logged configuration does not load (") &&
          Catch::EndsWith("was it written by another slowpipe version?"));
  CHECK_THROWS_AS(apply_logged_config({{"status", "complete"}}, options, "B.h5"), UsageError);
  CHECK_THROWS_WITH(apply_logged_config({}, options, "B.h5"),
                    "B.h5 holds no configuration: not a slowpipe run log");
}
