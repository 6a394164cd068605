// The training run: data, the pipeline engine, evaluation (with and without
// compression), simulated time from the network model, the HDF5 run log and the
// progress display. One call of train() is one run and one HDF5 file.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/train_config.h"

namespace slowpipe::sim {

struct TrainSummary {
  int64_t steps = 0;
  double final_loss = 0;
  double final_eval_loss = 0;
  double sim_time_s = 0;
  double wall_time_s = 0;
  bool interrupted = false;
  std::string out;
};

// `resolved` is the full resolved configuration (OptionSet::resolved()), stored
// as root attributes of the run log.
TrainSummary train(const TrainConfig& config,
                   const std::vector<std::pair<std::string, std::string>>& resolved);

}  // namespace slowpipe::sim
