// The op trace: what one training step did, op by op, as the pipeline engine
// (sim/) records it and the network model (netmodel/) replays it.
//
// Plain data, no libtorch. The engine appends ops in the global order in which
// its single process executed them; the ops of one (replica, device) appear in
// that device's schedule order. A device runs one or more model chunks
// (pipeline/schedule.h); c below is a chunk, and a device's ops name their
// chunk. Dependencies are implied by the kinds:
//   kForward(c, m)         after kForward(c-1, m), through kSendActivation(c-1, m)
//                          when chunks c-1 and c are on different devices;
//   kSendActivation(c, m)  is issued by c's device after kForward(c, m), to the
//                          device of chunk c+1 (`peer`); only between devices;
//   kBackward(c, m)        the whole backward (kBackwardInput(c, m): the
//                          input-gradient part of a split one); after the
//                          backward of (c+1, m), through kSendGradient(c+1, m)
//                          when c and c+1 are on different devices;
//   kSendGradient(c, m)    issued after kBackward/kBackwardInput(c, m), to the
//                          device of chunk c-1 (`peer`);
//   kBackwardWeight(c, m)  the weight-gradient part of a split backward, after
//                          kBackwardInput(c, m) on the same device;
//   kAllReduce(c)          one per chunk and replica, after every backward of c
//                          on that replica; the collective completes when all D
//                          replicas have joined; `bytes` is this replica's message;
//   kOptimizer(c)          after the all-reduce of chunk c (or after the last
//                          backward when D = 1).
// With one chunk per device (GPipe, 1F1B), chunk = device and peer = device ± 1.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "netmodel/op_work.h"

namespace slowpipe::netmodel {

enum class OpKind : uint8_t {
  kForward,
  kBackward,
  kSendActivation,
  kSendGradient,
  kAllReduce,
  kOptimizer,
  kBackwardInput,   // split backward: the input gradient (B of ZB-H1)
  kBackwardWeight,  // split backward: the weight gradients (W of ZB-H1)
};
// kBackward, or kBackwardInput: the pass whose result crosses to chunk c-1.
inline bool is_input_backward(OpKind k) {
  return k == OpKind::kBackward || k == OpKind::kBackwardInput;
}

const char* op_kind_name(OpKind kind);

struct TraceOp {
  OpKind kind = OpKind::kForward;
  int32_t device = 0;       // the pipeline device (stage position) that runs or sends it
  int32_t chunk = 0;        // the model chunk it belongs to (= device without interleaving)
  int32_t peer = -1;        // sends: the receiving device; -1 otherwise
  int32_t microbatch = -1;  // -1 for kAllReduce and kOptimizer
  int32_t replica = 0;
  double compute_s = 0;  // measured wall seconds of compute (forward, backward, optimizer)
  double encode_s = 0;   // sender-side codec seconds, wall (sends, all-reduce)
  double decode_s = 0;   // receiver-side codec seconds, wall
  uint64_t bytes = 0;    // bytes on the wire
  double flops = 0;      // model FLOPs of a compute op, for analytic compute models
  // Compute ops: CPU seconds of the thread that ran the op (valid when
  // StepTrace::thread_cpu is set); the calibrated compute model's clock.
  double thread_cpu_s = 0;
  // Optimizer: bytes of memory traffic of one step (a memory-bound op).
  double memory_bytes = 0;
  // Sends, all-reduce: bytes of the tensor before encoding (fp32), which the
  // analytic codec model streams through device memory.
  uint64_t raw_bytes = 0;
  // Compute ops: device kernels the op launches, counted from the model's
  // structure (docs/netmodel.md, "Launch floor"); the analytic model charges
  // each a fixed launch cost, so that tiny models are not simulated as free.
  int32_t kernels = 0;
};

struct StepTrace {
  int32_t stages = 1;  // pipeline devices per replica (pipeline.stages)
  int32_t chunks = 1;  // model chunks per replica (stages x virtual stages)
  int32_t microbatches = 1;
  int32_t replicas = 1;
  std::string schedule = "gpipe";
  // The kAllReduce ops are sharded exchanges (compress.grad_sync = momentum,
  // docs/grad-sync.md) instead of ring all-reduces: each replica sends 1/D of
  // its message to every other replica, and each then sends the averaged 1/D
  // back to every other.
  bool sharded_exchange = false;
  // True when every compute op's thread_cpu_s holds its whole CPU time (one
  // compute thread on a CPU device); false: only the wall seconds are known.
  bool thread_cpu = false;
  // Compact form: `ops` holds replica 0's ops only, and each of the `replicas`
  // replicas runs the same ops (a synthetic step of many replicas, e.g.
  // `slowpipe timing`). The replay follows replica 0 where the network is
  // replica-symmetric and expands the trace where not (replica_symmetry.h).
  bool replicated = false;
  std::vector<TraceOp> ops;
  // Per chunk: the forward work of one micro-batch, kernel class by kernel
  // class (op_work.h), which the chunk's forward and backward ops share;
  // empty when the model is not described that way (the shape-aware model,
  // shaped_model.h, then times each op's `flops`).
  std::vector<OpWork> chunk_work;
};

}  // namespace slowpipe::netmodel
