// The preflight of a training run: every up-front check, in one place and one
// order, run before anything is loaded, built or written, so a mistake costs a
// second and leaves no half-made run log behind (docs/reliability.md lists
// what is checked): the pipeline layout and distributed keys; run.device;
// run.out and run.save writable (an existing log refused unless overwritten or
// resumed); compress.* against the boundaries; net.* able to carry a step of
// this pipeline; the model's memory and model.init_from's header.
//
// Two of those need libtorch or the built models (run.device against this
// libtorch's devices, the model checks against the model registry), which
// this torch-free library cannot link: the caller that has them passes them
// in (LibtorchChecks; sim's are sim/internal/preflight.h). A sweep passes
// none, runs the rest on every point in the light front and leaves those two
// to the point's own run (config/README.md, "The preflight").
#pragma once

#include <functional>
#include <string>

#include "config/train_config.h"

namespace slowpipe::config {

// The checks a libtorch-linked caller supplies; an empty one is skipped.
struct LibtorchChecks {
  std::function<void(const std::string& device)> device;  // run.device
  std::function<void(const TrainConfig& config)> model;   // model.* (memory, init_from)
};

// Throws UsageError (or DataError for an unreadable init_from checkpoint)
// naming the key (or file) and what is wrong. `resuming`: run.out is expected
// to exist (it is the log being resumed). Order: pipeline.* and dist.*,
// run.device, run.* outputs, compress.*, net.*, model.*.
void preflight(const TrainConfig& config, bool resuming, const LibtorchChecks& libtorch = {});

}  // namespace slowpipe::config
