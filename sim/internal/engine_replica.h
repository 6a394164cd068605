// PipelineEngine's per-replica state, shared by engine.cpp (the step loop) and
// engine_state.cpp (saving and restoring it for resume). Internal to sim/.
#pragma once

#include <ATen/Tensor.h>

#include <memory>
#include <vector>

#include "compressors/channels/channel.h"
#include "models/torch/model.h"
#include "sim/engine.h"
#include "sim/optimizer.h"

namespace slowpipe::sim {

struct PipelineEngine::Replica {
  models::Model model;
  std::vector<StageOptimizer> optimizers;                     // per stage
  std::vector<std::vector<at::Tensor>> stage_params;          // per stage
  std::vector<std::unique_ptr<compressors::Channel>> fw, bw;  // per boundary
  std::vector<std::unique_ptr<compressors::Channel>> grad;    // per stage (D > 1)
  // compress.grad_sync = momentum (D > 1; engine_momentum.cpp): this replica's
  // worker channel of every (chunk, shard), [chunk * D + shard], and its
  // server channel of its own shard of every chunk, [chunk].
  std::vector<std::unique_ptr<compressors::Channel>> momentum, momentum_server;
  std::vector<double> flops_per_sample;  // per stage, forward
  std::vector<int> forward_kernels;      // per stage: kernels of one forward
  // Per stage: one micro-batch's forward, kernel class by kernel class (the
  // blocks that describe themselves; the others by FLOPs), for the shaped clock.
  std::vector<netmodel::OpWork> chunk_work;
};

}  // namespace slowpipe::sim
