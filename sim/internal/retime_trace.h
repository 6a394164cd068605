// The op trace of one step of a logged run, rebuilt without its training
// (`slowpipe retime`, docs/retime.md).
//
// Under a machine-independent clock (analytic, fixed) a step's simulated time
// depends on its ops (kinds, devices, order), their FLOPs, kernels, optimizer
// memory bytes and fp32 message sizes, which are the same at every step of a
// run whose batch size does not change, and on the bytes of each message,
// which the train table logs per boundary and step (summed over micro-batches
// and replicas). The skeleton comes from the pipeline engine itself, one step
// on the first batch of the run's data with every channel `none` (a codec
// changes the bytes of a message, never which ops run), so the retimed trace
// is the engine's, not a second description of it. Leaves out: runs whose
// trace changes in other ways over time (compress.grad_sync = momentum, whose
// exchange replaces the all-reduce after its warm-up; distributed runs).
#pragma once

#include <cstdint>
#include <vector>

#include "config/train_config.h"
#include "netmodel/trace.h"

namespace slowpipe::sim {

// One step of `cfg`'s pipeline on the first pipeline.batch_size samples of
// its training data, with cfg.compress channels all `none`, no initial
// checkpoint (model.init_from) and pipeline.cuts as given: the trace every
// step of the run shares but for its message bytes. `samples` receives the
// step's batch (all replicas).
netmodel::StepTrace step_trace_skeleton(const config::TrainConfig& cfg, int64_t* samples);

// One logged step's bytes on the wire: per boundary b forward (fw{b}_bytes)
// and backward (bw{b}_bytes), per model chunk s the data-parallel gradients
// (grad{s}_bytes); each summed over the step's micro-batches and replicas.
// NaN: the column is absent.
struct LoggedBytes {
  std::vector<double> fw, bw, grad;
};

// Sets the bytes of every message op of `trace` to its total in `bytes`
// divided by the messages of that boundary (or chunk) in the step: every
// codec's message size is a function of the tensor's shape, and a step lies
// in one epoch (warm-up or not), so the messages of one boundary in one step
// have one size. DataError naming the step and column when a total is
// missing or does not split into equal whole messages.
void set_message_bytes(netmodel::StepTrace& trace, const LoggedBytes& bytes, int64_t step);

}  // namespace slowpipe::sim
