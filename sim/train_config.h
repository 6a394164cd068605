// Everything `slowpipe train` is configured by: the sim/ structs plus the configs
// owned by models/, compressors/ and netmodel/. describe_options() gathers every
// module's keys into one OptionSet.
#pragma once

#include "common/options.h"
#include "compressors/config.h"
#include "models/data_config.h"
#include "models/model_config.h"
#include "netmodel/net_config.h"
#include "sim/run_config.h"

namespace slowpipe::sim {

struct TrainConfig {
  RunConfig run;
  DistConfig dist;
  PipelineConfig pipeline;
  OptimConfig optim;
  EvalConfig eval;
  models::ModelConfig model;
  models::DataConfig data;
  compressors::CompressConfig compress;
  netmodel::NetConfig net;
};

void describe_options(TrainConfig& c, OptionSet& o);

}  // namespace slowpipe::sim
