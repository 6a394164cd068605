// scripts/plot.sh end to end: run logs -> `slowpipe export` -> gnuplot -> PNG,
// with columns found by header name and curves labelled from each run's config;
// and its errors for a missing column.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "runlog/runlog.h"

namespace fs = std::filesystem;

namespace {

struct Result {
  int code;
  std::string output;
};

Result run_shell(const std::string& command, const std::string& log) {
  const int status = std::system((command + " >" + log + " 2>&1").c_str());
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, text.str()};
}

// A small run: train rows every step, eval rows every 25 steps. Columns are
// declared in a different order per run, so lookups by position would fail.
void make_run(const std::string& path, const std::string& fw, double rate, bool swap) {
  slowpipe::runlog::RunLog log(path, /*overwrite=*/false, /*flush_every=*/16);
  log.set_attribute("config.model.name", "gpt");
  log.set_attribute("config.compress.fw", fw);
  log.set_attribute("config.net.preset", "wan \"slow\"");  // quotes survive the trip
  std::vector<slowpipe::runlog::ColumnInfo> cols = {{"step", "1", ""}, {"loss", "nats", ""}};
  if (swap) std::swap(cols[0], cols[1]);
  log.declare("train", cols);
  log.declare("train", {{"sim_time_s", "s", ""}});
  log.declare("eval", {{"step", "1", ""}, {"loss", "nats", ""}, {"accuracy", "1", ""}});
  for (int s = 0; s < 200; ++s) {
    const double loss = 2.0 * std::exp(-rate * s) + 0.2 + 0.05 * std::sin(s);
    log.append("train", {{"step", s}, {"loss", loss}, {"sim_time_s", s * (1 + 10 * rate)}});
    if (s % 25 == 0) log.append("eval", {{"step", s}, {"loss", loss}, {"accuracy", 1 - loss / 3}});
  }
}

bool is_png(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[8] = {};
  in.read(magic, 8);
  return in.gcount() == 8 && std::string(magic, 8) == "\x89PNG\r\n\x1a\n";
}

}  // namespace

TEST_CASE("plot.sh: several runs on one PNG, columns by name") {
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    FAIL("gnuplot not found: install the Debian package gnuplot-nox (make test does)");
  }
  const fs::path dir = fs::path(SLOWPIPE_BINARY_DIR) / "test_runlog_tmp" / "plot";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string a = (dir / "a.h5").string();
  const std::string b = (dir / "b.h5").string();
  make_run(a, "q4", 0.02, false);
  make_run(b, "aq(q2)", 0.01, true);
  const std::string plot =
      std::string(SLOWPIPE_SOURCE_DIR) + "/scripts/plot.sh " + SLOWPIPE_RUNLOG_TOOL + " ";
  const std::string log = (dir / "plot.log").string();

  SECTION("loss vs step, loss vs simulated time, eval accuracy") {
    const std::string out1 = (dir / "png" / "loss_step.png").string();  // folder is created
    const std::string out2 = (dir / "loss_time.png").string();
    const std::string out3 = (dir / "eval_acc.png").string();
    Result r = run_shell(plot + out1 + " " + a + " " + b, log);
    INFO(r.output);
    REQUIRE(r.code == 0);
    CHECK_THAT(r.output, Catch::Contains("2 run(s)"));
    r = run_shell(plot + out2 + " --x sim_time_s --ema 0.8 --logy " + a + " " + b, log);
    REQUIRE(r.code == 0);
    r = run_shell(
        plot + out3 + " --table eval --y accuracy --title 'eval: accuracy' " + a + " " + b, log);
    REQUIRE(r.code == 0);
    for (const auto& png : {out1, out2, out3}) {
      CHECK(is_png(png));
      CHECK(fs::file_size(png) > 5000);  // axes, two curves and a key, not an empty frame
    }
  }
  SECTION("a missing column names the columns that exist") {
    const Result r = run_shell(plot + (dir / "x.png").string() + " --y bits_per_byte " + a, log);
    CHECK(r.code == 2);
    CHECK_THAT(r.output, Catch::Contains("no column 'bits_per_byte'") &&
                             Catch::Contains("step loss sim_time_s"));
    CHECK_FALSE(fs::exists(dir / "x.png"));
  }
  SECTION("usage errors") {
    CHECK(run_shell(plot + (dir / "x.png").string(), log).code == 2);  // no run
    CHECK(run_shell(plot + (dir / "x.png").string() + " --bogus " + a, log).code == 2);
    const Result r = run_shell(plot + (dir / "x.png").string() + " --table nope " + a, log);
    CHECK(r.code != 0);
    CHECK_THAT(r.output, Catch::Contains("no table 'nope'"));
  }
}
