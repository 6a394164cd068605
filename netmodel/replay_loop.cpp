// Devices as serial streams driven by one EventEngine (replay_loop.h).
#include "netmodel/internal/replay_loop.h"

#include <algorithm>
#include <limits>
#include <string>

#include "common/errors.h"
#include "netmodel/compute_model.h"

namespace slowpipe::netmodel {

void StepLoop::prepare(const StepTrace& trace, Timeline& out, const ComputeModel& compute,
                       const NetConfig& config, uint64_t& rng) {
  const size_t devices = static_cast<size_t>(stages_) * static_cast<size_t>(followed_replicas());
  engine_.reset();
  transport_.reset(engine_, config, &rng, out.timing);
  out_ = &out;
  compute_ = &compute;
  cursor_.assign(devices, 0);
  busy_.assign(devices, 0);
  done_.assign(trace.ops.size(), 0);
  in_flight_.assign(devices, 0);
  ops_.build(trace, stages_, followed_replicas());
  collective_.reset(replicas_, fold_);
  if (inbound_) {
    for (const TraceOp& op : trace.ops) {
      if (op.kind == OpKind::kAllReduce) {
        throw UsageError(
            "net.link_model = shared-inbound models pipeline messages only: the step has "
            "all-reduce ops (use one replica, or net.link_model = full-duplex)");
      }
    }
    wire_state_.assign(trace.ops.size(), 0);
    wires_.reset(transport_.topology().hosts());
  }
}

void StepLoop::try_start(int d) {
  const std::vector<int32_t>& stream = ops_.stream(d);
  if (busy_[d] || cursor_[d] >= stream.size()) return;
  const int32_t i = stream[cursor_[d]];
  int32_t decode_op;
  if (!ops_.ready(i, done_, decode_op)) {
    if (inbound_ && decode_op != kNoOp && wire_state_[decode_op] == 1) bill_inbound(decode_op);
    return;
  }
  const TraceOp& op = ops_.op(i);
  OpTiming& t = out_->timing[i];
  const double now = engine_.now();
  double end = now;
  if (op.kind == OpKind::kSendActivation || op.kind == OpKind::kSendGradient ||
      op.kind == OpKind::kAllReduce) {
    t.encode_start_s = now;
    t.encode_end_s = end = now + compute_->encode_s(op);
  } else {
    double dec = 0;
    if (decode_op != kNoOp) {
      dec = compute_->decode_s(ops_.op(decode_op));
      OpTiming& src = out_->timing[decode_op];
      src.decode_start_s = now;
      src.decode_end_s = now + dec;
    }
    t.start_s = now + dec;
    t.end_s = end = t.start_s + compute_->compute_s(op);
    if (op.kind == OpKind::kForward) {
      out_->peak_activations[d] = std::max(out_->peak_activations[d], ++in_flight_[d]);
    }
  }
  out_->device_busy_s[d] += end - now;
  busy_[d] = 1;
  engine_.schedule(end, kComputeDone, static_cast<uint32_t>(d), static_cast<uint64_t>(i));
}

// The devices that may wait on chunk c's ops: its own and its neighbours'.
void StepLoop::wake_chunk_neighbours(int r, int c) {
  try_start(ops_.device(r, ops_.chunk_device(c)));
  if (c + 1 < ops_.chunks()) try_start(ops_.device(r, ops_.chunk_device(c + 1)));
  if (c > 0) try_start(ops_.device(r, ops_.chunk_device(c - 1)));
}

void StepLoop::finish_all_reduce(int r, int c) {
  const int32_t op = ops_.all_reduce(r, c);
  done_[op] = 1;
  out_->timing[op].end_s = engine_.now();
  try_start(ops_.device(r, ops_.chunk_device(c)));
}

void StepLoop::on_compute_done(int d, int32_t i) {
  busy_[d] = 0;
  ++cursor_[d];
  const TraceOp& op = ops_.op(i);
  const int r = op.replica, c = op.chunk;
  switch (op.kind) {
    case OpKind::kForward:
    case OpKind::kBackwardInput:
    case OpKind::kOptimizer:
      done_[i] = 1;
      break;
    case OpKind::kBackward:
    case OpKind::kBackwardWeight:
      done_[i] = 1;
      --in_flight_[d];  // the micro-batch's activations are freed
      break;
    case OpKind::kSendActivation:
    case OpKind::kSendGradient:
      on_send(d, i);
      break;
    case OpKind::kAllReduce:
      out_->timing[i].start_s = engine_.now();
      if (collective_.join(c)) finish_all_reduce(r, c);
      break;
  }
  wake_chunk_neighbours(r, c);
}

// A pipeline send's encode is done: its message goes on the wire.
void StepLoop::on_send(int d, int32_t i) {
  const TraceOp& op = ops_.op(i);
  const int r = op.replica;
  out_->timing[i].start_s = engine_.now();
  Message m;
  m.op = i;
  const auto kind = op.kind == OpKind::kSendActivation ? ConnectionKind::kActivations
                                                       : ConnectionKind::kGradients;
  const Topology& topo = transport_.topology();
  if (inbound_) {  // posted: billed when the receiver waits on it (bill_inbound)
    wire_state_[i] = 1;
    try_start(ops_.device(r, op.peer));
    return;
  }
  transport_.send(m, d, ops_.device(r, op.peer), kind, topo.host(r, op.device),
                  topo.host(r, op.peer), static_cast<double>(op.bytes));
}

// The receiver waits on posted message `msg`: it goes on the receiver's
// inbound wire now, in the receiver's order (replay_inbound.h). Its rate is
// the nominal bandwidth of its route's slowest resource (no efficiency).
void StepLoop::bill_inbound(int32_t msg) {
  const TraceOp& op = ops_.op(msg);
  Topology& topo = transport_.topology();
  const int to = topo.host(op.replica, op.peer);
  const Route& route = topo.route(topo.host(op.replica, op.device), to);
  OpTiming& t = out_->timing[msg];
  wire_state_[msg] = 2;
  if (route.local) {
    engine_.schedule(engine_.now(), kWireArrival, static_cast<uint32_t>(msg));
    return;
  }
  double capacity_bps = std::numeric_limits<double>::infinity();
  for (uint32_t k = 0; k < route.length; ++k) {
    capacity_bps = std::min(capacity_bps, transport_.network().capacity_bps(route.path[k]));
  }
  const double bits = 8.0 * static_cast<double>(op.bytes) + transport_.overhead_bits();
  const WireBill b = wires_.bill(to, t.start_s, bits, capacity_bps / efficiency_,
                                 transport_.message_latency_s(route));
  t.start_s = b.start_s;  // the ready time until now: the first bit from here
  engine_.schedule(b.arrival_s, kWireArrival, static_cast<uint32_t>(msg));
}

void StepLoop::on_wire_arrival(int32_t msg) {
  done_[msg] = 1;
  out_->timing[msg].end_s = engine_.now();
  const TraceOp& op = ops_.op(msg);
  try_start(ops_.device(op.replica, op.peer));
}

void StepLoop::on_arrival(uint32_t msg_id) {
  const Message msg = transport_.message(msg_id);
  if (!msg.collective) {
    done_[msg.op] = 1;
    out_->timing[msg.op].end_s = engine_.now();
    const TraceOp& op = ops_.op(msg.op);
    try_start(ops_.device(op.replica, op.peer));
    return;
  }
  const int finished = collective_.on_arrival(msg);
  if (finished >= 0) finish_all_reduce(finished, msg.chunk);
}

void StepLoop::run() {
  for (int d = 0; d < stages_ * followed_replicas(); ++d) try_start(d);
  engine_.run([this](const Event& ev) {
    switch (ev.type) {
      case kComputeDone:
        on_compute_done(static_cast<int>(ev.target), static_cast<int32_t>(ev.aux));
        break;
      case kNetWake:
        transport_.on_wake(ev.aux);
        break;
      case kArrival:
        on_arrival(ev.target);
        break;
      case kWireArrival:
        on_wire_arrival(static_cast<int32_t>(ev.target));
        break;
      default:
        break;
    }
  });
  check_drained();
}

void StepLoop::check_drained() const {
  for (int d = 0; d < stages_ * followed_replicas(); ++d) {
    const std::vector<int32_t>& stream = ops_.stream(d);
    if (cursor_[d] < stream.size()) {
      const TraceOp& op = ops_.op(stream[cursor_[d]]);
      throw DataError("op trace: replay stalled: replica " + std::to_string(op.replica) +
                      " device " + std::to_string(op.device) + " waits forever on its " +
                      op_kind_name(op.kind) + " of chunk " + std::to_string(op.chunk) +
                      ", micro-batch " + std::to_string(op.microbatch) +
                      " (ops out of schedule order?)");
    }
  }
}

}  // namespace slowpipe::netmodel
