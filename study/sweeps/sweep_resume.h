// What a rerun of a sweep does with each point, from the point's run log (if
// any) and its resolved configuration. The rules (docs/sweep.md):
//
//   no log                                         run
//   unreadable log                                 run from scratch (says why)
//   logged config differs                          run from scratch (names the keys)
//   same config, complete                          skip
//   same config, diverged                          skip: a diverged run is a result
//   same config, interrupted or running (killed)   resume (slowpipe train --resume)
//   same config, failed or an unknown status       run from scratch
//
// "Same config" ignores the keys a resumed run may change
// (config::resume_key_may_differ: run.progress, run.flush_every, run.checkpoint_*,
// run.out and run.overwrite).
// decide_point() is pure; read_log_state() does the reading. plan_text() says
// what a run would do, for --dry-run ("would resume from step 120: interrupted").
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "study/sweeps/sweep_points.h"

namespace slowpipe::study {

struct LogState {
  bool exists = false;
  std::string error;                          // non-empty: the log exists but cannot be read (why)
  std::string status;                         // the "status" attribute ("" when absent)
  std::string failure;                        // the "error" attribute of a failed or diverged run
  std::map<std::string, std::string> config;  // config.* attributes, without "config."
  // The step of the newest resume checkpoint in PATH.ckpt/ (step-N.ckpt), where
  // `train --resume` continues from; 0 when there is none.
  int64_t checkpoint_step = 0;
};

enum class PointAction { kRun, kResume, kSkip };
const char* action_name(PointAction a);  // "run", "resume", "skip"

struct PointDecision {
  PointAction action = PointAction::kRun;
  bool diverged = false;    // kSkip of a diverged run
  bool fresh = true;        // kRun over an existing log (false: no log yet)
  std::string reason;       // the log's state alone ("interrupted", "failed (disk full)")
  std::string why;          // one line for the sweep's report: the reason and the action
  int64_t resume_step = 0;  // kResume: the step the run continues from
};

// The keys whose values differ between a logged and a wanted configuration,
// as "key: logged -> wanted" (a key one side lacks shows "(unset)").
std::vector<std::string> config_differences(const std::map<std::string, std::string>& logged,
                                            const Resolved& wanted);

PointDecision decide_point(const LogState& log, const Resolved& wanted);

// What running the sweep would do with the point, for --dry-run: "would run",
// "would run from scratch: REASON", "would resume from step N: REASON",
// "done" (complete), "done: diverged, kept as a result (...)".
std::string plan_text(const PointDecision& d);

// Reads a run log's status and configuration; never throws (an unreadable
// log is described in `error`).
LogState read_log_state(const std::string& path);

}  // namespace slowpipe::study
