// Everything `slowpipe train` is configured by: the section_configs.h structs plus
// the configs owned by models/, compressors/ and netmodel/. describe_options()
// gathers every module's keys into one OptionSet; resume_key_may_differ() says
// which of them a resumed run may change. Plain C++ (no libtorch): the sweep
// resolves its points against this option set in the light front.
#pragma once

#include <string>

#include "common/options.h"
#include "compressors/codecs/config.h"
#include "config/section_configs.h"
#include "models/facts/data_config.h"
#include "models/facts/model_config.h"
#include "netmodel/net_config.h"

namespace slowpipe::config {

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

// The keys that may differ between a run and its resumption (they do not
// change what is computed): run.progress, run.flush_every, run.checkpoint_*,
// run.out (the log may be named by another path), run.overwrite and where a
// resumed run's ranks meet (dist.rank, master_addr, master_port, timeout,
// verbose). The
// checkpoint fingerprint, `train --resume` and a sweep's rerun skip them.
bool resume_key_may_differ(const std::string& key);

// The network a run's steps are timed on: cfg.net, with the shape-aware
// clock's dtype (net.compute = shaped:..., no dtype= given) set to run.dtype
// (docs/compute-clock.md). The trainer, the preflight and `retime` all time
// through it.
netmodel::NetConfig timed_net(const TrainConfig& cfg);

}  // namespace slowpipe::config
