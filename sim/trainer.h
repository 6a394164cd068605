// The training run: data, the pipeline engine, evaluation (with and without
// compression), simulated time from the network model, the HDF5 run log, resume
// checkpoints and the progress display. One call of train() is one run and one
// HDF5 file (continued, not replaced, when resuming).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "config/train_config.h"
#include "sim/engine.h"

namespace slowpipe::sim {

// How a run ended; also the log's `status` attribute.
enum class RunStatus { kComplete, kInterrupted, kDiverged };
const char* status_name(RunStatus s);

struct TrainSummary {
  int64_t steps = 0;
  double final_loss = 0;
  double final_eval_loss = 0;
  double sim_time_s = 0;
  double wall_time_s = 0;
  RunStatus status = RunStatus::kComplete;
  std::string message;        // why it diverged
  int64_t resumed_from = -1;  // steps done at the checkpoint resumed from; -1: fresh run
  std::string out;
};

using ResolvedConfig = std::vector<std::pair<std::string, std::string>>;

// Builds the engine of one rank of a distributed run (distributed/dist_engine.h); the
// CLI passes it, so that sim/ does not depend on distributed/.
using DistEngineFactory = std::function<std::unique_ptr<StepEngine>(
    const EngineSetup&, const config::TrainConfig&, const ResolvedConfig&)>;

// `resolved` is the full resolved configuration (OptionSet::resolved()), stored
// as root attributes of the run log. With `resume`, run.out is a run log
// written by an earlier train() with the same configuration: the run continues
// from its newest resume checkpoint (or from the start when it has none),
// rewriting the rows logged after it. Any exception leaves the log marked
// `status = failed` with an `error` attribute, every row written so far kept.
//
// With dist.world_size > 0 this process is one rank of a distributed run
// (docs/distributed.md), built by `distributed`: rank 0 trains its stage and
// writes the log, every other rank serves rank 0 and returns when it ends.
TrainSummary train(const config::TrainConfig& config, const ResolvedConfig& resolved,
                   bool resume = false, const DistEngineFactory& distributed = {});

}  // namespace slowpipe::sim
