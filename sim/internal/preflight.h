// The preflight's checks that need libtorch or the models, for
// config::preflight (config/preflight.h, which holds every check and their
// order): run.device is a device this libtorch has; the model fits this
// machine's memory; model.init_from is a checkpoint of the same model. The
// trainer runs config::preflight(config, resuming, libtorch_checks()) before
// anything is loaded, built or written (docs/reliability.md).
#pragma once

#include "config/preflight.h"

namespace slowpipe::sim {

config::LibtorchChecks libtorch_checks();

}  // namespace slowpipe::sim
