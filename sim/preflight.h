// Checks of a training configuration that need no data and no model: run before
// anything is loaded, built or written, so a mistake costs a second and leaves
// no half-made run log behind (docs/reliability.md lists what is checked).
#pragma once

#include "sim/train_config.h"

namespace slowpipe::sim {

// Throws UsageError naming the key (or file) and what is wrong.
// `resuming`: run.out is expected to exist (it is the log being resumed).
void preflight(const TrainConfig& config, bool resuming);

}  // namespace slowpipe::sim
