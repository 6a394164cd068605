// The op trace: what one training step did, op by op, as the pipeline engine
// (sim/) records it and the network model (netmodel/) replays it.
//
// Plain data, no libtorch. The engine appends ops in the global order in which
// its single process executed them; the ops of one (replica, stage) appear in
// that stage's schedule order. Dependencies are implied by the kinds:
//   kSendActivation(s, m)  is issued by stage s after kForward(s, m) and must
//                          arrive before kForward(s+1, m) starts;
//   kSendGradient(s, m)    is issued by stage s after kBackward(s, m) and must
//                          arrive before kBackward(s-1, m) starts;
//   kAllReduce(s)          one per stage and replica, after every kBackward(s, *)
//                          of that replica; the collective completes when all D
//                          replicas have joined; `bytes` is this replica's message;
//   kOptimizer(s)          after the all-reduce of stage s (or after the last
//                          backward when D = 1).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace slowpipe::netmodel {

enum class OpKind : uint8_t {
  kForward,
  kBackward,
  kSendActivation,
  kSendGradient,
  kAllReduce,
  kOptimizer,
};

const char* to_string(OpKind kind);

struct TraceOp {
  OpKind kind = OpKind::kForward;
  int32_t stage = 0;        // the stage that runs or sends it
  int32_t microbatch = -1;  // -1 for kAllReduce and kOptimizer
  int32_t replica = 0;
  double compute_s = 0;  // measured seconds of compute (forward, backward, optimizer)
  double encode_s = 0;   // sender-side codec seconds (sends, all-reduce)
  double decode_s = 0;   // receiver-side codec seconds
  uint64_t bytes = 0;    // bytes on the wire
  double flops = 0;      // model FLOPs of a compute op, for analytic compute models
};

struct StepTrace {
  int32_t stages = 1;
  int32_t microbatches = 1;
  int32_t replicas = 1;
  std::string schedule = "gpipe";
  std::vector<TraceOp> ops;
};

}  // namespace slowpipe::netmodel
