// The step's operations, indexed for the replay (replay.h): every op of the
// trace checked against the step's sizes and filed under its slot (its kind,
// replica, chunk and micro-batch) and under its device's stream, and the one
// dependency test (`ready`) a device applies before it starts its next op.
// The dependency rules are trace.h's. Leaves out: time of any kind (the event
// loop, replay_loop.h, decides when things happen).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "netmodel/trace.h"

namespace slowpipe::netmodel {

constexpr int32_t kNoOp = -1;

class StepOps {
 public:
  // Clears the index and files every op of `trace` (which must outlive the
  // step) for `stages` devices x `replicas` replicas. Throws DataError naming
  // the first inconsistent op.
  void build(const StepTrace& trace, int stages, int replicas);

  // Are op i's inputs there, given `done` (per op)? `decode_op` is set to the
  // message whose decode precedes it on its stream (kNoOp if none).
  bool ready(int32_t i, const std::vector<uint8_t>& done, int32_t& decode_op) const;

  const StepTrace& trace() const { return *trace_; }
  const TraceOp& op(int32_t i) const { return trace_->ops[static_cast<size_t>(i)]; }
  int chunks() const { return C_; }
  int device(int replica, int stage) const { return replica * stages_ + stage; }
  // The device (stage position) that runs chunk c.
  int chunk_device(int c) const { return chunk_device_[static_cast<size_t>(c)]; }
  // Device d's ops in trace order.
  const std::vector<int32_t>& stream(int d) const { return stream_[static_cast<size_t>(d)]; }
  int32_t all_reduce(int replica, int c) const { return all_reduce_[chunk_slot(replica, c)]; }
  size_t chunk_slot(int replica, int c) const { return static_cast<size_t>(replica) * C_ + c; }

 private:
  void reset(const StepTrace& trace, int stages, int replicas);
  void file_op(size_t k);
  template <class Bad>
  void check_op(const TraceOp& op, const Bad& bad);
  void check_all_reduces() const;
  size_t slot(int r, int c, int m) const { return (static_cast<size_t>(r) * C_ + c) * M_ + m; }

  const StepTrace* trace_ = nullptr;
  int stages_ = 1, replicas_ = 1;
  int M_ = 1;
  int C_ = 1;                                 // chunks per replica
  std::vector<int32_t> chunk_device_;         // [chunk]: its device (stage position)
  std::vector<std::vector<int32_t>> stream_;  // per device: op indices
  // [(replica * C + chunk) * M + m]
  std::vector<int32_t> fwd_, bwd_, wgt_, send_act_, send_grad_;
  std::vector<int32_t> all_reduce_, optimizer_;  // [replica * C + chunk]
};

}  // namespace slowpipe::netmodel
