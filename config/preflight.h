// Checks of a training configuration that need no data, no model and no
// libtorch: run before anything is loaded, built or written, so a mistake costs
// a second and leaves no half-made run log behind (docs/reliability.md lists
// what is checked). The pipeline layout and distributed keys; run.out and
// run.save writable (an existing log refused unless overwritten or resumed);
// compress.* against the boundaries; net.* able to carry a step of this
// pipeline. sim::preflight (sim/internal/preflight.h) adds the checks that need
// libtorch or the models (run.device, model memory, model.init_from's header);
// a sweep runs check_config on every point in the light front and leaves
// those to the point's own run.
#pragma once

#include "config/train_config.h"

namespace slowpipe::config {

// Each throws UsageError naming the key (or file) and what is wrong.
// `resuming`: run.out is expected to exist (it is the log being resumed).
// The two halves, in sim::preflight's order around its device check:
void check_layout(const TrainConfig& config, bool resuming);  // pipeline.*, dist.*
void check_outputs_and_network(const TrainConfig& config,
                               bool resuming);  // run.*, compress.*, net.*
// Both, in that order.
void check_config(const TrainConfig& config, bool resuming);

}  // namespace slowpipe::config
