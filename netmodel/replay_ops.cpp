// The op index of one replayed step: checks and slots (replay_ops.h).
#include "netmodel/internal/replay_ops.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/errors.h"

namespace slowpipe::netmodel {

void StepOps::build(const StepTrace& trace, int stages, int replicas) {
  reset(trace, stages, replicas);
  for (size_t k = 0; k < trace.ops.size(); ++k) file_op(k);
  for (int c = 0; c < C_; ++c) {
    if (chunk_device_[c] == kNoOp) chunk_device_[c] = std::min(c, stages_ - 1);  // no ops
  }
  if (replicas_ > 1) check_all_reduces();
}

void StepOps::reset(const StepTrace& trace, int stages, int replicas) {
  stages_ = stages;
  replicas_ = replicas;
  const size_t devices = static_cast<size_t>(stages) * static_cast<size_t>(replicas);
  const size_t chunk_slots = static_cast<size_t>(trace.chunks) * static_cast<size_t>(replicas);
  const size_t slots = chunk_slots * static_cast<size_t>(trace.microbatches);
  trace_ = &trace;
  M_ = trace.microbatches;
  C_ = trace.chunks;
  chunk_device_.assign(C_, kNoOp);
  stream_.resize(devices);
  for (auto& v : stream_) v.clear();
  for (auto* v : {&fwd_, &bwd_, &wgt_, &send_act_, &send_grad_}) v->assign(slots, kNoOp);
  all_reduce_.assign(chunk_slots, kNoOp);
  optimizer_.assign(chunk_slots, kNoOp);
}

// Checks op k and files it under its slot and its device's stream.
void StepOps::file_op(size_t k) {
  const TraceOp& op = trace_->ops[k];
  const auto bad = [&](const std::string& why) {
    throw DataError("op trace: op " + std::to_string(k) + " (" + op_kind_name(op.kind) +
                    ", device " + std::to_string(op.device) + ", chunk " +
                    std::to_string(op.chunk) + ", micro-batch " + std::to_string(op.microbatch) +
                    ", replica " + std::to_string(op.replica) + "): " + why);
  };
  check_op(op, bad);
  int32_t* slot_of = nullptr;
  switch (op.kind) {
    case OpKind::kForward:
      slot_of = &fwd_[slot(op.replica, op.chunk, op.microbatch)];
      break;
    case OpKind::kBackward:
    case OpKind::kBackwardInput:
      slot_of = &bwd_[slot(op.replica, op.chunk, op.microbatch)];
      break;
    case OpKind::kBackwardWeight:
      slot_of = &wgt_[slot(op.replica, op.chunk, op.microbatch)];
      break;
    case OpKind::kSendActivation:
      slot_of = &send_act_[slot(op.replica, op.chunk, op.microbatch)];
      break;
    case OpKind::kSendGradient:
      slot_of = &send_grad_[slot(op.replica, op.chunk, op.microbatch)];
      break;
    case OpKind::kAllReduce:
      slot_of = &all_reduce_[chunk_slot(op.replica, op.chunk)];
      break;
    case OpKind::kOptimizer:
      slot_of = &optimizer_[chunk_slot(op.replica, op.chunk)];
      break;
  }
  if (*slot_of != kNoOp) bad("duplicate op");
  *slot_of = static_cast<int32_t>(k);
  stream_[device(op.replica, op.device)].push_back(static_cast<int32_t>(k));
}

template <class Bad>
void StepOps::check_op(const TraceOp& op, const Bad& bad) {
  for (double v :
       {op.compute_s, op.encode_s, op.decode_s, op.flops, op.thread_cpu_s, op.memory_bytes}) {
    if (!std::isfinite(v) || v < 0) bad("negative or non-finite seconds or FLOPs");
  }
  if (op.device < 0 || op.device >= stages_) bad("device out of range");
  if (op.chunk < 0 || op.chunk >= C_) bad("chunk out of range");
  if (op.replica < 0 || op.replica >= replicas_) bad("replica out of range");
  if (chunk_device_[op.chunk] == kNoOp) chunk_device_[op.chunk] = op.device;
  if (chunk_device_[op.chunk] != op.device) bad("chunk's ops on two devices");
  const bool per_mb = op.kind != OpKind::kAllReduce && op.kind != OpKind::kOptimizer;
  if (per_mb && (op.microbatch < 0 || op.microbatch >= M_)) bad("micro-batch out of range");
  if (op.kind == OpKind::kSendActivation && op.chunk == C_ - 1) bad("last chunk sends activation");
  if (op.kind == OpKind::kSendGradient && op.chunk == 0) bad("first chunk sends gradient");
  const bool send = op.kind == OpKind::kSendActivation || op.kind == OpKind::kSendGradient;
  if (send && (op.peer < 0 || op.peer >= stages_)) bad("send to a device out of range");
}

void StepOps::check_all_reduces() const {
  for (int c = 0; c < C_; ++c) {
    int count = 0;
    for (int r = 0; r < replicas_; ++r) count += all_reduce_[chunk_slot(r, c)] != kNoOp;
    if (count != 0 && count != replicas_) {
      throw DataError("op trace: chunk " + std::to_string(c) +
                      " has an all-reduce on some replicas only");
    }
  }
}

bool StepOps::ready(int32_t i, const std::vector<uint8_t>& done, int32_t& decode_op) const {
  const TraceOp& op = trace_->ops[i];
  const int r = op.replica, c = op.chunk, m = op.microbatch;
  decode_op = kNoOp;
  // The input crosses as message `msg` (another device) or is `producer`'s
  // result on this device (no message).
  auto dep = [&](int32_t msg, int32_t producer) {
    if (msg != kNoOp) {
      decode_op = msg;
      return done[msg] != 0;
    }
    return producer == kNoOp || done[producer] != 0;
  };
  auto after = [&](int32_t producer) { return producer == kNoOp || done[producer] != 0; };
  switch (op.kind) {
    case OpKind::kForward:
      if (c == 0) return true;
      return dep(send_act_[slot(r, c - 1, m)], fwd_[slot(r, c - 1, m)]);
    case OpKind::kBackward:
    case OpKind::kBackwardInput:
      if (c == C_ - 1) return true;
      return dep(send_grad_[slot(r, c + 1, m)], bwd_[slot(r, c + 1, m)]);
    case OpKind::kBackwardWeight:
      return after(bwd_[slot(r, c, m)]);
    case OpKind::kSendActivation:
      return after(fwd_[slot(r, c, m)]);
    case OpKind::kSendGradient:
      return after(bwd_[slot(r, c, m)]);
    case OpKind::kAllReduce:
      return true;
    case OpKind::kOptimizer:
      return dep(all_reduce_[chunk_slot(r, c)], kNoOp);
  }
  return true;
}

}  // namespace slowpipe::netmodel
