// Up-front validation of a training run: the torch-free checks of
// config/preflight.h plus those that need libtorch or the models (run.device
// is a device this libtorch has; the model fits this machine's memory;
// model.init_from is a checkpoint of the same model). Run by the trainer
// before anything is loaded, built or written (docs/reliability.md).
#pragma once

#include "config/train_config.h"

namespace slowpipe::sim {

// Throws UsageError (or DataError for an unreadable init_from checkpoint)
// naming the key (or file) and what is wrong. `resuming`: run.out is expected
// to exist (it is the log being resumed).
void preflight(const TrainConfig& config, bool resuming);

}  // namespace slowpipe::sim
