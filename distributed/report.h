// What each rank tells rank 0 after a step, and how rank 0 merges the reports
// into one StepResult equal in content and order to the single-process
// engine's (losses summed in the same order, trace ops in the same order).
// Reports cross as bytes (comm.h); all ranks run the same slowpipe build (the
// start-up check compares versions), so plain structs are copied as they are.
#pragma once

#include <cstdint>
#include <vector>

#include "distributed/comm.h"
#include "distributed/layout.h"
#include "pipeline/schedule.h"
#include "sim/engine.h"

namespace slowpipe::dist {

// The receiver's codec seconds of one message, for the sender's trace op.
struct DecodeTime {
  netmodel::OpKind kind = netmodel::OpKind::kSendActivation;
  int32_t stage = 0;  // the sending chunk, as in the trace op
  int32_t microbatch = 0;
  double seconds = 0;
};

// The relative error of one message this rank sent (compressors/channels/rel_error.h),
// keyed like DecodeTime; rank 0 sums them in the single-process order.
struct SentError {
  netmodel::OpKind kind = netmodel::OpKind::kSendActivation;
  int32_t stage = 0;  // the sending chunk
  int32_t microbatch = 0;
  double rel_error = 0;
};

struct RankReport {
  std::vector<double> losses;  // last stage: per micro-batch, in its op order
  std::vector<netmodel::TraceOp>
      ops;  // pipeline ops in this rank's order, then all-reduce, optimizer
  std::vector<DecodeTime> decodes;
  std::vector<SentError> errors;  // boundary messages; NaN where not measured
  // Per boundary (S - 1): the sender's part (bytes, encode_s, delta_norm, transfers)
  // and the receiver's (decode_s); the bytes handed to c10d.
  std::vector<sim::ChannelSummary> fw, bw;
  std::vector<uint64_t> fw_wire, bw_wire;
  // Per chunk this rank holds (chunk order): its gradient exchange (D > 1),
  // rel_error included, and the bytes handed to c10d for it.
  std::vector<sim::ChannelSummary> grad;
  std::vector<uint64_t> grad_wire;
  uint64_t channel_state_bytes = 0;
  double grad_norm = 0;  // of this rank's replica
  // The momentum exchange (dist_momentum.cpp): this step ran it; per chunk k
  // this rank holds, the relative error of its shard message to each server
  // j (shard_errors[k * D + j], NaN at its own), and of its own server
  // message (counted once per other replica).
  bool sharded = false;
  std::vector<double> shard_errors;
  std::vector<double> server_errors;
};

Bytes pack(const RankReport& r);
// Throws DataError for bytes that are not a report.
RankReport unpack(const Bytes& bytes);

// reports[rank]; `order` is the single-process global op order of one
// replica; device_of[c]: the device holding chunk c (empty: chunk c on
// device c, one chunk per process).
sim::StepResult merge(const std::vector<RankReport>& reports, const Layout& layout,
                      const std::vector<netmodel::ScheduledOp>& order,
                      std::vector<int32_t> device_of = {});

}  // namespace slowpipe::dist
