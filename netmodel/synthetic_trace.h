// Synthetic op traces: what the pipeline engine would record for one step,
// built from a schedule (and, for what-if runs, a model shape) instead of a
// real run. Used by `slowpipe timing`, the closed-form tests and the benchmarks.
//
// Op order per (replica, device): the schedule's order, each forward followed
// by its activation send and each (input) backward by its gradient send when
// the neighbouring chunk lives on another device; then, per chunk of the
// device, an all-reduce when replicas > 1 and the optimizer.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "netmodel/compute_model.h"
#include "netmodel/model_shape.h"
#include "netmodel/schedule.h"
#include "netmodel/trace.h"

namespace slowpipe::netmodel {

// Builds the op skeleton; `fill` sets compute_s, flops, bytes, ... of each op.
// `compact` (and replicas > 1): replica 0's ops only, StepTrace::replicated.
StepTrace build_trace(const Schedule& schedule, const std::string& name, int replicas,
                      const std::function<void(TraceOp&)>& fill, bool compact = false);
// The same for make_schedule(schedule, stages, microbatches, virtual_stages).
StepTrace build_trace(const std::string& schedule, int stages, int microbatches, int replicas,
                      const std::function<void(TraceOp&)>& fill, int virtual_stages = 1);

// Exact bytes on the wire of a tensor of `shape` under a channel spec (the
// lead passes compressors::wire_bytes).
using WireBytesFn =
    std::function<uint64_t(const std::string& spec, const std::vector<int64_t>& shape)>;

struct CodecSpecs {
  std::string forward = "none";   // activations
  std::string backward = "none";  // activation gradients
  std::string gradient = "none";  // data-parallel all-reduce of weight gradients
};

// A step of `shape` (micro-batches = batch / microbatch_size) with analytic
// FLOPs, kernels, optimizer memory bytes and compute seconds (analytic on
// `device`), message bytes from `wire_bytes` and their fp32 sizes
// (activations and their gradients: [microbatch_size, seq, hidden]; weight
// gradients: [parameters of the chunk]); measured codec seconds are 0 (the
// analytic model computes its own from the byte counts). With
// virtual_stages = v > 1 the layers are cut into shape.stages x v chunks.
// `compact`: replica 0's ops standing for all (StepTrace::replicated); the
// size limit then applies to one replica's ops.
// Largest synthetic step (trace ops) make_synthetic_trace builds: ~0.5 GB.
constexpr double kMaxSyntheticOps = 4e6;

StepTrace make_synthetic_trace(const ModelShape& shape, const std::string& schedule, int replicas,
                               const CodecSpecs& specs, const WireBytesFn& wire_bytes,
                               const DevicePreset& device, int virtual_stages = 1,
                               bool compact = false);

}  // namespace slowpipe::netmodel
