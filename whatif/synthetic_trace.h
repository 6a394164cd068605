// Synthetic op traces for what-if runs: the step a model shape would record
// under a schedule (netmodel/schedule_trace.h builds the skeleton), each op
// filled with analytic FLOPs, kernels and compute seconds and with the exact
// bytes its codec spec puts on the wire. Used by `slowpipe timing`, the
// closed-form tests and the benchmarks.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "compressors/codecs/channel_spec.h"
#include "models/facts/model_shape.h"
#include "netmodel/compute_model.h"
#include "netmodel/schedule_trace.h"
#include "netmodel/trace.h"

namespace slowpipe::whatif {

using models::ModelShape;

// The channel specs of a step, parsed once where the timing options are read
// (cmd_timing): what each boundary sends forward and backward, and what the
// replicas all-reduce. Their text is what the printout names.
struct CodecSpecs {
  compressors::ChannelSpec forward;   // activations; "none" (fp32) by default
  compressors::ChannelSpec backward;  // activation gradients
  compressors::ChannelSpec gradient;  // data-parallel all-reduce of weight gradients
};

// Exact bytes on the wire of one message of `shape` under `spec`.
using WireBytesFn = std::function<uint64_t(const compressors::ChannelSpec& spec,
                                           const std::vector<int64_t>& shape)>;
// compressors::wire_bytes, what `slowpipe timing` sizes its messages with; a
// topk:shared backward is sized against `forward`, its boundary's forward
// spec (its values follow the forward's selection). Tests pass their own.
WireBytesFn codec_wire_bytes(const compressors::ChannelSpec& forward);

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

netmodel::StepTrace make_synthetic_trace(const ModelShape& shape, const std::string& schedule,
                                         int replicas, const CodecSpecs& specs,
                                         const WireBytesFn& wire_bytes,
                                         const netmodel::DevicePreset& device,
                                         int virtual_stages = 1, bool compact = false);

}  // namespace slowpipe::whatif
