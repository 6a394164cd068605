// Synthetic what-if steps (synthetic_trace.h): a schedule's op skeleton
// (netmodel/schedule_trace.h) filled from a model shape's FLOPs, kernels and
// parameters (models/facts/model_shape.h) and its messages' wire bytes.
#include "whatif/synthetic_trace.h"

#include <memory>

#include "common/errors.h"
#include "models/facts/layer_work.h"
#include "pipeline/schedule.h"

namespace slowpipe::whatif {

using netmodel::DevicePreset;
using netmodel::OpKind;
using netmodel::StepTrace;
using netmodel::TraceOp;

WireBytesFn codec_wire_bytes(const compressors::ChannelSpec& forward) {
  return [forward](const compressors::ChannelSpec& spec, const std::vector<int64_t>& shape) {
    return compressors::wire_bytes(forward, spec, shape);  // `spec` alone unless topk:shared
  };
}

namespace {

// The layers cut into stages x virtual stages chunks (one per stage without
// interleaving); the shape's own per-stage layers need v = 1.
ModelShape chunked_shape(const ModelShape& device_shape, int virtual_stages) {
  check_model_shape(device_shape);
  ModelShape shape = device_shape;
  if (virtual_stages > 1) {
    if (!shape.stage_layers.empty()) {
      throw UsageError("model shape '" + shape.name +
                       "': per-stage layers cannot be cut into virtual stages");
    }
    shape.stages = device_shape.stages * virtual_stages;
    check_model_shape(shape);
  }
  return shape;
}

// Each micro-batch of each stage and replica is a handful of trace ops of
// ~100 bytes: refuse a step too large to hold before building it.
void check_trace_size(const ModelShape& shape, int M, int replicas) {
  const double ops = static_cast<double>(replicas) * shape.stages * (4.0 * M + 2.0);
  if (ops > kMaxSyntheticOps) {
    throw UsageError("model shape '" + shape.name + "': " + std::to_string(shape.stages) +
                     " stages x " + std::to_string(M) + " micro-batches x " +
                     std::to_string(replicas) + " replicas make " +
                     std::to_string(static_cast<int64_t>(ops)) + " ops per step, more than the " +
                     std::to_string(static_cast<int64_t>(kMaxSyntheticOps)) +
                     " one replay holds; use fewer, larger micro-batches (timing.microbatch) or a "
                     "smaller timing.batch");
  }
}

// What each op of a chunk carries: FLOPs, kernels, memory traffic, wire and
// raw bytes, and the device's analytic seconds.
class ChunkCosts {
 public:
  ChunkCosts(const ModelShape& shape, const CodecSpecs& specs, const WireBytesFn& wire_bytes,
             const DevicePreset& device)
      : shape_(shape),
        fwd_(shape.stages),
        params_(shape.stages),

        reduce_bytes_(shape.stages),
        // compute_s: the device's analytic seconds, what calibrated, measured and
        // scaled replay; the analytic models recompute them from the same fields.
        analytic_(netmodel::make_compute_model(netmodel::analytic_compute_spec(device.name))) {
    const std::vector<int64_t> boundary = {shape.microbatch_size, shape.seq,
                                           boundary_width(shape)};  // [b, T, d] (or k)
    act_bytes_ = wire_bytes(specs.forward, boundary);
    grad_bytes_ = wire_bytes(specs.backward, boundary);
    act_raw_ = 4ull * static_cast<uint64_t>(shape.microbatch_size * shape.seq *
                                            boundary_width(shape));  // fp32 [b, T, d] (or k)
    for (int s = 0; s < shape.stages; ++s) {
      fwd_[s] = forward_flops(shape, s);
      params_[s] = stage_parameters(shape, s);
      reduce_bytes_[s] = wire_bytes(specs.gradient, {static_cast<int64_t>(params_[s])});  // [P_s]
    }
  }

  void fill(TraceOp& op) const {
    const int c = op.chunk;
    switch (op.kind) {
      case OpKind::kForward:
      case OpKind::kBackwardInput:  // a split backward: input and weight halves
      case OpKind::kBackwardWeight:
        op.flops = fwd_[c];
        op.kernels = forward_kernels(shape_, c);
        break;
      case OpKind::kBackward:
        op.flops = 2 * fwd_[c];
        op.kernels = 2 * forward_kernels(shape_, c);
        break;
      case OpKind::kOptimizer:  // AdamW: ~10 FLOPs and 7 fp32 tensors per parameter
        op.flops = 10 * params_[c];
        op.memory_bytes = 28 * params_[c];
        op.kernels = parameter_tensors(shape_, c);
        break;
      case OpKind::kSendActivation:
      case OpKind::kSendGradient:
        op.bytes = op.kind == OpKind::kSendActivation ? act_bytes_ : grad_bytes_;
        op.raw_bytes = act_raw_;
        break;
      case OpKind::kAllReduce:
        op.bytes = reduce_bytes_[c];
        op.raw_bytes = 4 * static_cast<uint64_t>(params_[c]);
        break;
    }
    op.compute_s = analytic_->compute_s(op);
  }

 private:
  const ModelShape& shape_;
  std::vector<double> fwd_, params_;
  std::vector<uint64_t> reduce_bytes_;
  uint64_t act_bytes_ = 0, grad_bytes_ = 0, act_raw_ = 0;
  std::unique_ptr<netmodel::ComputeModel> analytic_;
};

}  // namespace

StepTrace make_synthetic_trace(const ModelShape& device_shape, const std::string& schedule,
                               int replicas, const CodecSpecs& specs, const WireBytesFn& wire_bytes,
                               const DevicePreset& device, int virtual_stages, bool compact) {
  const ModelShape shape = chunked_shape(device_shape, virtual_stages);
  const int M = shape.batch / shape.microbatch_size;
  check_trace_size(shape, M, compact ? 1 : replicas);
  const ChunkCosts costs(shape, specs, wire_bytes, device);
  const auto sched = netmodel::make_schedule(schedule, device_shape.stages, M, virtual_stages);
  StepTrace trace = netmodel::build_trace(
      sched, schedule, replicas, [&](TraceOp& op) { costs.fill(op); }, compact);
  for (int c = 0; c < shape.stages; ++c) trace.chunk_work.push_back(models::forward_work(shape, c));
  return trace;
}

}  // namespace slowpipe::whatif
