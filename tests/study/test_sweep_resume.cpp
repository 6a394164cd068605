// What a rerun of a sweep does with each point: the pure decision over
// (status, logged config, wanted config), and the same on real run logs.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "runlog/runlog.h"
#include "study/sweeps/sweep_resume.h"

namespace {

namespace fs = std::filesystem;
using slowpipe::study::decide_point;
using slowpipe::study::LogState;
using slowpipe::study::plan_text;
using slowpipe::study::PointAction;
using slowpipe::study::PointDecision;
using slowpipe::study::read_log_state;
using slowpipe::study::Resolved;

const Resolved kWanted = {{"compress.fw", "q4"},     {"run.checkpoint_every", "auto"},
                          {"run.out", "/a/b.h5"},    {"run.overwrite", "false"},
                          {"run.progress", "plain"}, {"run.seed", "1"}};

LogState logged(const std::string& status) {
  LogState s;
  s.exists = true;
  s.status = status;
  for (const auto& [k, v] : kWanted) s.config[k] = v;
  return s;
}

}  // namespace

TEST_CASE("Sweep resume: the decision per point") {
  SECTION("no log: run") {
    const PointDecision d = decide_point(LogState{}, kWanted);
    CHECK(d.action == PointAction::kRun);
    CHECK_FALSE(d.fresh);
  }
  SECTION("complete with the same config: skip") {
    CHECK(decide_point(logged("complete"), kWanted).action == PointAction::kSkip);
  }
  SECTION("keys a resume may change, run.out and run.overwrite do not count") {
    LogState s = logged("complete");
    s.config["run.progress"] = "auto";
    s.config["run.checkpoint_every"] = "5";
    s.config["run.out"] = "elsewhere.h5";
    s.config["run.overwrite"] = "true";
    CHECK(decide_point(s, kWanted).action == PointAction::kSkip);
  }
  SECTION("complete with another config: run again, naming the key") {
    LogState s = logged("complete");
    s.config["compress.fw"] = "q2";
    const PointDecision d = decide_point(s, kWanted);
    CHECK(d.action == PointAction::kRun);
    CHECK(d.fresh);
    CHECK_THAT(d.why, Catch::Contains("compress.fw: q2 -> q4"));
    s = logged("complete");
    s.config.erase("run.seed");
    s.config["run.extra"] = "1";
    CHECK_THAT(decide_point(s, kWanted).why, Catch::Contains("run.seed: (unset) -> 1") &&
                                                 Catch::Contains("run.extra: 1 -> (unset)"));
  }
  SECTION("interrupted or killed while running: resume") {
    CHECK(decide_point(logged("interrupted"), kWanted).action == PointAction::kResume);
    CHECK(decide_point(logged("running"), kWanted).action == PointAction::kResume);
    LogState s = logged("interrupted");
    s.config["run.seed"] = "2";
    CHECK(decide_point(s, kWanted).action == PointAction::kRun);  // not its run: start over
  }
  SECTION("failed: run again; diverged: a result, kept") {
    LogState s = logged("failed");
    s.failure = "disk full";
    CHECK(decide_point(s, kWanted).action == PointAction::kRun);
    CHECK_THAT(decide_point(s, kWanted).why, Catch::Contains("disk full"));
    const PointDecision d = decide_point(logged("diverged"), kWanted);
    CHECK(d.action == PointAction::kSkip);
    CHECK(d.diverged);
  }
  SECTION("unreadable or unknown: run again") {
    LogState s = logged("complete");
    s.error = "not HDF5";
    CHECK(decide_point(s, kWanted).action == PointAction::kRun);
    CHECK(decide_point(logged("weird"), kWanted).action == PointAction::kRun);
  }
}

TEST_CASE("Sweep resume: what --dry-run says a run would do") {
  CHECK(plan_text(decide_point(LogState{}, kWanted)) == "would run");
  CHECK(plan_text(decide_point(logged("complete"), kWanted)) == "done");
  LogState s = logged("diverged");
  s.failure = "loss is NaN";
  CHECK(plan_text(decide_point(s, kWanted)) == "done: diverged, kept as a result (loss is NaN)");
  s = logged("interrupted");
  s.checkpoint_step = 120;
  CHECK(plan_text(decide_point(s, kWanted)) == "would resume from step 120: interrupted");
  CHECK(decide_point(s, kWanted).why == "interrupted: resuming");  // the running sweep's words
  s.status = "running";
  CHECK(plan_text(decide_point(s, kWanted)) == "would resume from step 120: killed while running");
  s = logged("failed");
  s.failure = "disk full";
  CHECK(plan_text(decide_point(s, kWanted)) == "would run from scratch: failed (disk full)");
  s = logged("complete");
  s.config["compress.fw"] = "q2";
  CHECK_THAT(plan_text(decide_point(s, kWanted)),
             Catch::StartsWith("would run from scratch: the logged configuration differs") &&
                 !Catch::Contains("running it again"));
}

TEST_CASE("Sweep resume: real run logs") {
  const fs::path dir = fs::temp_directory_path() / ("sweep_resume_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "p.h5").string();
  const auto write_log = [&path](const std::string& status, const std::string& fw) {
    slowpipe::runlog::RunLog log(path, /*overwrite=*/true);
    for (const auto& [k, v] : kWanted)
      log.set_attribute("config." + k, k == "compress.fw" ? fw : v);
    log.set_attribute("status", status);
    log.declare("train", {{"loss", "1", "training loss"}});
    log.append("train", {{"loss", 1.5}});
  };
  write_log("complete", "q4");
  CHECK(decide_point(read_log_state(path), kWanted).action == PointAction::kSkip);
  write_log("complete", "q2");
  CHECK(decide_point(read_log_state(path), kWanted).action == PointAction::kRun);
  write_log("interrupted", "q4");
  CHECK(decide_point(read_log_state(path), kWanted).action == PointAction::kResume);
  CHECK(read_log_state(path).checkpoint_step == 0);  // no checkpoint folder: from the start
  // The newest resume checkpoint (sim/resume_checkpoint.cpp's file names).
  fs::create_directories(path + ".ckpt");
  for (const char* n : {"step-000000050.ckpt", "step-000000100.ckpt", "step-x.ckpt", "other"}) {
    std::ofstream(path + ".ckpt/" + n) << "x";
  }
  CHECK(read_log_state(path).checkpoint_step == 100);
  CHECK(plan_text(decide_point(read_log_state(path), kWanted)) ==
        "would resume from step 100: interrupted");
  write_log("diverged", "q4");
  CHECK(decide_point(read_log_state(path), kWanted).diverged);
  std::ofstream(path, std::ios::trunc) << "not a run log";
  const LogState junk = read_log_state(path);
  CHECK(junk.exists);
  CHECK_FALSE(junk.error.empty());
  CHECK(decide_point(junk, kWanted).action == PointAction::kRun);
  CHECK_FALSE(read_log_state((dir / "none.h5").string()).exists);
  fs::remove_all(dir);
}
