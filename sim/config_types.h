// The configuration types the simulator works with, from the torch-free
// config/ library (namespace slowpipe::config), named here so that sim's code
// reads them as its own. Other layers name them config::TrainConfig etc.
#pragma once

#include "config/optim_registry.h"
#include "config/section_configs.h"
#include "config/train_config.h"

namespace slowpipe::sim {

using config::DistConfig;
using config::EvalConfig;
using config::learning_rate;
using config::lr_schedule_registry;
using config::LrScheduleInfo;
using config::OptimConfig;
using config::optimizer_registry;
using config::OptimizerInfo;
using config::OptimizerKind;
using config::PipelineConfig;
using config::resume_key_may_differ;
using config::RunConfig;
using config::TrainConfig;

}  // namespace slowpipe::sim
