// The replay engine: devices as serial streams, messages as flows, the ring
// all-reduce as a chain of flows, all driven by one EventEngine.
#include "netmodel/replay.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <ostream>
#include <string>
#include <unordered_map>

#include "common/errors.h"
#include "common/units.h"
#include "netmodel/compute_model.h"
#include "netmodel/event_engine.h"
#include "netmodel/flow_network.h"
#include "netmodel/topology.h"

namespace slowpipe::netmodel {
namespace {

enum EventType : uint32_t { kComputeDone, kNetWake, kArrival };

constexpr int32_t kNone = -1;

// splitmix64: a tiny, portable, seedable generator (std distributions differ
// between standard libraries; this keeps timelines identical everywhere).
uint64_t next_u64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

struct Simulator::State {
  struct Message {
    bool collective = false;  // a ring step or an exchange shard (else a pipeline send)
    uint8_t shard_phase = 0;  // sharded exchange: 1 = to the shard's server, 2 = back
    int32_t op = kNone;       // pipeline send: its op index
    int32_t chunk = 0;        // ring and exchange: chunk, sending replica, step / receiver
    int32_t from = 0;
    int32_t to = 0;
    int32_t step = 0;
    uint32_t connection = 0;
    double latency_s = 0;
  };
  // Messages of one connection (sender -> receiver, one direction) leave one
  // after another, as over one TCP connection; connections share links fairly.
  struct Pending {
    uint32_t message;
    const Route* route;
    double bytes;
  };
  struct Connection {
    bool busy = false;
    std::deque<Pending> queue;
  };
  enum ConnectionKind : uint64_t { kActivations, kGradients, kRing, kExchange };

  State(const NetConfig& config, int stages, int replicas)
      : stages(stages), replicas(replicas), topology(config, stages, replicas, network) {}

  int stages, replicas;
  FlowNetwork network;
  Topology topology;
  EventEngine engine;

  // per step
  const StepTrace* trace = nullptr;
  Timeline* out = nullptr;
  const ComputeModel* compute = nullptr;
  const NetConfig* config = nullptr;
  uint64_t* rng = nullptr;
  int M = 1;
  int C = 1;                                 // chunks per replica
  std::vector<int32_t> chunk_device;         // [chunk]: its device (stage position)
  std::vector<std::vector<int32_t>> stream;  // per device: op indices
  std::vector<size_t> cursor;
  std::vector<uint8_t> busy;
  std::vector<uint8_t> done;  // per op: compute finished / delivered / reduced
  // [(replica * C + chunk) * M + m]
  std::vector<int32_t> fwd, bwd, wgt, send_act, send_grad;
  std::vector<int32_t> all_reduce, optimizer;  // [replica * C + chunk]
  std::vector<int32_t> in_flight;              // [device]
  std::vector<int32_t> joined;                 // [chunk]
  // Sharded exchange, [replica * C + chunk]: shards received as the server,
  // averaged shards received back.
  std::vector<int32_t> shards_in, shards_back;
  std::vector<Message> messages;
  std::vector<Connection> connections;
  std::unordered_map<uint64_t, uint32_t> connection_index;  // (from, to, kind) -> connection
  std::vector<uint32_t> flow_message;
  std::vector<uint32_t> finished;
  uint64_t wake_version = ~0ull;

  int device(int r, int s) const { return r * stages + s; }
  size_t slot(int r, int c, int m) const { return (static_cast<size_t>(r) * C + c) * M + m; }
  size_t chunk_slot(int r, int c) const { return static_cast<size_t>(r) * C + c; }

  uint32_t connection(int from_device, int to_device, ConnectionKind kind) {
    const uint64_t key =
        (static_cast<uint64_t>(from_device) << 34) | (static_cast<uint64_t>(to_device) << 2) | kind;
    const auto [it, added] =
        connection_index.emplace(key, static_cast<uint32_t>(connections.size()));
    if (added) connections.emplace_back();
    return it->second;
  }

  double jitter_s() {
    if (config->jitter_s <= 0) return 0;
    const double u = static_cast<double>(next_u64(*rng) >> 11) * 0x1.0p-53;  // [0, 1)
    return -config->jitter_s * std::log1p(-u);
  }

  void schedule_wake() {
    const double t = network.next_finish_s();
    if (std::isinf(t) || wake_version == network.version()) return;
    wake_version = network.version();
    engine.schedule(t, kNetWake, 0, wake_version);
  }

  void send(uint32_t msg_id, int host_from, int host_to, double bytes) {
    Message& msg = messages[msg_id];
    const Route& route = topology.route(host_from, host_to);
    if (route.local) {
      msg.latency_s = 0;
      engine.schedule(engine.now(), kArrival, msg_id);
      return;
    }
    Connection& conn = connections[msg.connection];
    if (conn.busy) {
      conn.queue.push_back({msg_id, &route, bytes});
      return;
    }
    start_flow(msg_id, route, bytes);
  }

  void start_flow(uint32_t msg_id, const Route& route, double bytes) {
    Message& msg = messages[msg_id];
    connections[msg.connection].busy = true;
    msg.latency_s = route.latency_s + config->overhead_s + jitter_s();
    const double bits = 8.0 * (bytes + config->overhead_bytes);
    const uint32_t flow = network.start_flow(engine.now(), route.path, route.length, bits);
    if (flow_message.size() <= flow) flow_message.resize(flow + 1);
    flow_message[flow] = msg_id;
    if (msg.op != kNone) out->timing[msg.op].start_s = engine.now();
    schedule_wake();
  }

  uint32_t new_message(const Message& m) {
    messages.push_back(m);
    return static_cast<uint32_t>(messages.size() - 1);
  }

  // Input of op i ready? Also returns the op whose decode precedes it.
  bool ready(int32_t i, int32_t& decode_op) const {
    const TraceOp& op = trace->ops[i];
    const int r = op.replica, c = op.chunk, m = op.microbatch;
    decode_op = kNone;
    // The input crosses as message `msg` (another device) or is `producer`'s
    // result on this device (no message).
    auto dep = [&](int32_t msg, int32_t producer) {
      if (msg != kNone) {
        decode_op = msg;
        return done[msg] != 0;
      }
      return producer == kNone || done[producer] != 0;
    };
    auto after = [&](int32_t producer) { return producer == kNone || done[producer] != 0; };
    switch (op.kind) {
      case OpKind::kForward:
        if (c == 0) return true;
        return dep(send_act[slot(r, c - 1, m)], fwd[slot(r, c - 1, m)]);
      case OpKind::kBackward:
      case OpKind::kBackwardInput:
        if (c == C - 1) return true;
        return dep(send_grad[slot(r, c + 1, m)], bwd[slot(r, c + 1, m)]);
      case OpKind::kBackwardWeight:
        return after(bwd[slot(r, c, m)]);
      case OpKind::kSendActivation:
        return after(fwd[slot(r, c, m)]);
      case OpKind::kSendGradient:
        return after(bwd[slot(r, c, m)]);
      case OpKind::kAllReduce:
        return true;
      case OpKind::kOptimizer:
        return dep(all_reduce[chunk_slot(r, c)], kNone);
    }
    return true;
  }

  void try_start(int d) {
    if (busy[d] || cursor[d] >= stream[d].size()) return;
    const int32_t i = stream[d][cursor[d]];
    int32_t decode_op;
    if (!ready(i, decode_op)) return;
    const TraceOp& op = trace->ops[i];
    OpTiming& t = out->timing[i];
    const double now = engine.now();
    double end = now;
    if (op.kind == OpKind::kSendActivation || op.kind == OpKind::kSendGradient ||
        op.kind == OpKind::kAllReduce) {
      t.encode_start_s = now;
      t.encode_end_s = end = now + compute->encode_s(op);
    } else {
      double dec = 0;
      if (decode_op != kNone) {
        dec = compute->decode_s(trace->ops[decode_op]);
        OpTiming& src = out->timing[decode_op];
        src.decode_start_s = now;
        src.decode_end_s = now + dec;
      }
      t.start_s = now + dec;
      t.end_s = end = t.start_s + compute->compute_s(op);
      if (op.kind == OpKind::kForward) {
        out->peak_activations[d] = std::max(out->peak_activations[d], ++in_flight[d]);
      }
    }
    out->device_busy_s[d] += end - now;
    busy[d] = 1;
    engine.schedule(end, kComputeDone, static_cast<uint32_t>(d), static_cast<uint64_t>(i));
  }

  // The devices that may wait on chunk c's ops: its own and its neighbours'.
  void wake_chunk_neighbours(int r, int c) {
    try_start(device(r, chunk_device[c]));
    if (c + 1 < C) try_start(device(r, chunk_device[c + 1]));
    if (c > 0) try_start(device(r, chunk_device[c - 1]));
  }

  // A message of chunk c's collective from replica `from` to replica `to`:
  // 1/D of the sender's all-reduce message (ring step, or exchange shard).
  void send_collective(Message m, int c, int from, int to, ConnectionKind kind) {
    const int32_t op = all_reduce[chunk_slot(from, c)];
    const double bytes = static_cast<double>(trace->ops[op].bytes) / replicas;
    m.collective = true;
    m.chunk = c;
    m.from = from;
    m.to = to;
    const int s = chunk_device[c];
    m.connection = connection(device(from, s), device(to, s), kind);
    send(new_message(m), topology.host(from, s), topology.host(to, s), bytes);
  }

  void start_ring_step(int c, int from, int step) {
    Message m;
    m.step = step;
    send_collective(m, c, from, (from + 1) % replicas, kRing);
  }

  // Sharded exchange: phase 1 to the shard's server `to`, phase 2 back from it.
  void send_shard(int c, int from, int to, uint8_t phase) {
    Message m;
    m.shard_phase = phase;
    send_collective(m, c, from, to, kExchange);
  }

  // Replica r has its averaged moment once it served its own shard (all D-1
  // shards in) and got every other server's average back.
  void maybe_finish_exchange(int r, int c) {
    const size_t k = chunk_slot(r, c);
    if (shards_in[k] == replicas - 1 && shards_back[k] == replicas - 1) finish_all_reduce(r, c);
  }

  void on_shard_arrival(const Message& msg) {
    const int c = msg.chunk;
    if (msg.shard_phase == 1) {
      if (++shards_in[chunk_slot(msg.to, c)] == replicas - 1) {
        for (int k = 0; k < replicas; ++k) {
          if (k != msg.to) send_shard(c, msg.to, k, 2);
        }
      }
    } else {
      ++shards_back[chunk_slot(msg.to, c)];
    }
    maybe_finish_exchange(msg.to, c);
  }

  void finish_all_reduce(int r, int c) {
    const int32_t op = all_reduce[chunk_slot(r, c)];
    done[op] = 1;
    out->timing[op].end_s = engine.now();
    try_start(device(r, chunk_device[c]));
  }

  void on_compute_done(int d, int32_t i) {
    busy[d] = 0;
    ++cursor[d];
    const TraceOp& op = trace->ops[i];
    const int r = op.replica, c = op.chunk;
    switch (op.kind) {
      case OpKind::kForward:
      case OpKind::kBackwardInput:
      case OpKind::kOptimizer:
        done[i] = 1;
        break;
      case OpKind::kBackward:
      case OpKind::kBackwardWeight:
        done[i] = 1;
        --in_flight[d];  // the micro-batch's activations are freed
        break;
      case OpKind::kSendActivation:
      case OpKind::kSendGradient: {
        out->timing[i].start_s = engine.now();
        Message m;
        m.op = i;
        m.connection = connection(d, device(r, op.peer),
                                  op.kind == OpKind::kSendActivation ? kActivations : kGradients);
        send(new_message(m), topology.host(r, op.device), topology.host(r, op.peer),
             static_cast<double>(op.bytes));
        break;
      }
      case OpKind::kAllReduce:
        out->timing[i].start_s = engine.now();
        if (replicas == 1) {
          finish_all_reduce(r, c);
        } else if (++joined[c] == replicas) {
          for (int k = 0; k < replicas; ++k) {
            if (!trace->sharded_exchange) {
              start_ring_step(c, k, 0);
              continue;
            }
            for (int j = 0; j < replicas; ++j) {
              if (j != k) send_shard(c, k, j, 1);
            }
          }
        }
        break;
    }
    wake_chunk_neighbours(r, c);
  }

  void on_arrival(uint32_t msg_id) {
    const Message msg = messages[msg_id];
    if (!msg.collective) {
      done[msg.op] = 1;
      out->timing[msg.op].end_s = engine.now();
      const TraceOp& op = trace->ops[msg.op];
      try_start(device(op.replica, op.peer));
      return;
    }
    if (msg.shard_phase != 0) {
      on_shard_arrival(msg);
      return;
    }
    const int to = (msg.from + 1) % replicas;
    if (msg.step + 1 < 2 * (replicas - 1)) {
      start_ring_step(msg.chunk, to, msg.step + 1);
    } else {
      finish_all_reduce(to, msg.chunk);
    }
  }

  void on_net_wake(uint64_t version) {
    if (version != network.version()) return;  // stale: rates changed since
    finished.clear();
    network.collect_finished(engine.now(), finished);
    // Map flows to messages first: starting a queued message may reuse a flow id.
    for (uint32_t& flow : finished) flow = flow_message[flow];
    for (uint32_t msg : finished) {
      engine.schedule(engine.now() + messages[msg].latency_s, kArrival, msg);
      Connection& conn = connections[messages[msg].connection];
      conn.busy = false;
      if (!conn.queue.empty()) {
        const Pending next = conn.queue.front();
        conn.queue.pop_front();
        start_flow(next.message, *next.route, next.bytes);
      }
    }
    schedule_wake();
  }

  // Phase 1: clear the per-step state for `t`'s sizes.
  void reset(const StepTrace& t, Timeline& timeline, const ComputeModel* model,
             const NetConfig* net, uint64_t* stream_rng) {
    const size_t devices = static_cast<size_t>(stages) * static_cast<size_t>(replicas);
    const size_t chunk_slots = static_cast<size_t>(t.chunks) * static_cast<size_t>(replicas);
    const size_t slots = chunk_slots * static_cast<size_t>(t.microbatches);
    engine.reset();
    network.reset();
    wake_version = ~0ull;
    trace = &t;
    out = &timeline;
    compute = model;
    config = net;
    rng = stream_rng;
    M = t.microbatches;
    C = t.chunks;
    chunk_device.assign(C, kNone);
    stream.resize(devices);
    for (auto& v : stream) v.clear();
    cursor.assign(devices, 0);
    busy.assign(devices, 0);
    done.assign(t.ops.size(), 0);
    for (auto* v : {&fwd, &bwd, &wgt, &send_act, &send_grad}) v->assign(slots, kNone);
    all_reduce.assign(chunk_slots, kNone);
    optimizer.assign(chunk_slots, kNone);
    in_flight.assign(devices, 0);
    joined.assign(C, 0);
    shards_in.assign(chunk_slots, 0);
    shards_back.assign(chunk_slots, 0);
    messages.clear();
    // Connections are device pairs: the index stays from step to step (the
    // same pairs talk every step), only their queues start empty.
    for (Connection& conn : connections) {
      conn.busy = false;
      conn.queue.clear();
    }
  }

  // Phase 2: check every op and file it under its slot and its device's stream.
  void index_ops() {
    for (size_t k = 0; k < trace->ops.size(); ++k) {
      const TraceOp& op = trace->ops[k];
      const auto bad = [&](const std::string& why) {
        throw DataError("op trace: op " + std::to_string(k) + " (" + op_kind_name(op.kind) +
                        ", device " + std::to_string(op.device) + ", chunk " +
                        std::to_string(op.chunk) + ", micro-batch " +
                        std::to_string(op.microbatch) + ", replica " + std::to_string(op.replica) +
                        "): " + why);
      };
      check_op(op, bad);
      int32_t* slot_of = nullptr;
      switch (op.kind) {
        case OpKind::kForward:
          slot_of = &fwd[slot(op.replica, op.chunk, op.microbatch)];
          break;
        case OpKind::kBackward:
        case OpKind::kBackwardInput:
          slot_of = &bwd[slot(op.replica, op.chunk, op.microbatch)];
          break;
        case OpKind::kBackwardWeight:
          slot_of = &wgt[slot(op.replica, op.chunk, op.microbatch)];
          break;
        case OpKind::kSendActivation:
          slot_of = &send_act[slot(op.replica, op.chunk, op.microbatch)];
          break;
        case OpKind::kSendGradient:
          slot_of = &send_grad[slot(op.replica, op.chunk, op.microbatch)];
          break;
        case OpKind::kAllReduce:
          slot_of = &all_reduce[chunk_slot(op.replica, op.chunk)];
          break;
        case OpKind::kOptimizer:
          slot_of = &optimizer[chunk_slot(op.replica, op.chunk)];
          break;
      }
      if (*slot_of != kNone) bad("duplicate op");
      *slot_of = static_cast<int32_t>(k);
      stream[device(op.replica, op.device)].push_back(static_cast<int32_t>(k));
    }
    for (int c = 0; c < C; ++c) {
      if (chunk_device[c] == kNone) chunk_device[c] = std::min(c, stages - 1);  // no ops
    }
    if (replicas > 1) {
      for (int c = 0; c < C; ++c) {
        int count = 0;
        for (int r = 0; r < replicas; ++r) count += all_reduce[chunk_slot(r, c)] != kNone;
        if (count != 0 && count != replicas) {
          throw DataError("op trace: chunk " + std::to_string(c) +
                          " has an all-reduce on some replicas only");
        }
      }
    }
  }

  template <class Bad>
  void check_op(const TraceOp& op, const Bad& bad) {
    for (double v :
         {op.compute_s, op.encode_s, op.decode_s, op.flops, op.thread_cpu_s, op.memory_bytes}) {
      if (!std::isfinite(v) || v < 0) bad("negative or non-finite seconds or FLOPs");
    }
    if (op.device < 0 || op.device >= stages) bad("device out of range");
    if (op.chunk < 0 || op.chunk >= C) bad("chunk out of range");
    if (op.replica < 0 || op.replica >= replicas) bad("replica out of range");
    if (chunk_device[op.chunk] == kNone) chunk_device[op.chunk] = op.device;
    if (chunk_device[op.chunk] != op.device) bad("chunk's ops on two devices");
    const bool per_mb = op.kind != OpKind::kAllReduce && op.kind != OpKind::kOptimizer;
    if (per_mb && (op.microbatch < 0 || op.microbatch >= M)) bad("micro-batch out of range");
    if (op.kind == OpKind::kSendActivation && op.chunk == C - 1) bad("last chunk sends activation");
    if (op.kind == OpKind::kSendGradient && op.chunk == 0) bad("first chunk sends gradient");
    const bool send = op.kind == OpKind::kSendActivation || op.kind == OpKind::kSendGradient;
    if (send && (op.peer < 0 || op.peer >= stages)) bad("send to a device out of range");
  }

  // Phase 3: run the event loop until every stream is drained.
  void run() {
    for (int d = 0; d < stages * replicas; ++d) try_start(d);
    engine.run([this](const Event& ev) {
      switch (ev.type) {
        case kComputeDone:
          on_compute_done(static_cast<int>(ev.target), static_cast<int32_t>(ev.aux));
          break;
        case kNetWake:
          on_net_wake(ev.aux);
          break;
        case kArrival:
          on_arrival(ev.target);
          break;
        default:
          break;
      }
    });
    for (int d = 0; d < stages * replicas; ++d) {
      if (cursor[d] < stream[d].size()) {
        const TraceOp& op = trace->ops[stream[d][cursor[d]]];
        throw DataError("op trace: replay stalled: replica " + std::to_string(op.replica) +
                        " device " + std::to_string(op.device) + " waits forever on its " +
                        op_kind_name(op.kind) + " of chunk " + std::to_string(op.chunk) +
                        ", micro-batch " + std::to_string(op.microbatch) +
                        " (ops out of schedule order?)");
      }
    }
  }

  // Phase 4: step time, bubble and link usage.
  void summarise() {
    double step = 0;
    for (const OpTiming& t : out->timing)
      step = std::max({step, t.end_s, t.encode_end_s, t.decode_end_s});
    out->step_s = step;
    double total_busy = 0;
    for (double b : out->device_busy_s) total_busy += b;
    out->bubble_fraction =
        step > 0 ? 1.0 - total_busy / (step * static_cast<double>(stages) * replicas) : 0.0;
    for (uint32_t r = 0; r < network.resource_count(); ++r) {
      out->links.push_back(
          {network.resource_name(r), network.busy_s(r), network.carried_bits(r) / 8.0});
    }
    out->events = engine.processed();
    trace = nullptr;
    out = nullptr;
  }
};

Simulator::Simulator(const NetConfig& config)
    : config_(config), compute_(make_compute_model(config.compute)) {
  find_net_preset(config.preset);
  parse_link_overrides("net.links", config.links);
  rng_state_ = static_cast<uint64_t>(config.seed) * 0x2545F4914F6CDD1Dull + 1;
}

Simulator::~Simulator() = default;

Simulator::Carry Simulator::carry() const {
  return {rng_state_, elapsed_s_, steps_, compute_->save_state()};
}

void Simulator::restore(const Carry& c) {
  compute_->load_state(c.compute_state);
  rng_state_ = c.rng_state;
  elapsed_s_ = c.elapsed_s;
  steps_ = c.steps;
}

std::string Simulator::compute_description() const {
  return compute_->describe_json();
}

Timeline Simulator::replay(const StepTrace& trace) {
  const int S = trace.stages, D = trace.replicas, M = trace.microbatches, C = trace.chunks;
  if (S < 1 || D < 1 || M < 1 || C < 1)
    throw DataError("op trace: stages, chunks, replicas, micro-batches must be >= 1");
  if (static_cast<double>(C) * D * M > 1e8 || static_cast<double>(S) * D > 1e8) {
    throw DataError("op trace: chunks x replicas x micro-batches is implausibly large");
  }
  if (!state_ || state_->stages != S || state_->replicas != D) {
    state_.reset();
    state_ = std::make_unique<State>(config_, S, D);
  }
  const size_t devices = static_cast<size_t>(S) * static_cast<size_t>(D);
  Timeline out;
  out.stages = S;
  out.replicas = D;
  out.schedule = trace.schedule;
  out.ops = trace.ops;
  out.timing.assign(trace.ops.size(), OpTiming{});
  out.device_busy_s.assign(devices, 0.0);
  out.peak_activations.assign(devices, 0);
  State& st = *state_;
  st.reset(trace, out, compute_.get(), &config_, &rng_state_);
  st.index_ops();
  compute_->observe(trace);
  st.run();
  st.summarise();
  elapsed_s_ += out.step_s;
  ++steps_;
  return out;
}

Timeline replay(const StepTrace& trace, const NetConfig& config) {
  Simulator sim(config);
  return sim.replay(trace);
}

void print_summary(const Timeline& t, std::ostream& os) {
  os << "step time " << format_duration(t.step_s) << ", bubble " << t.bubble_fraction * 100 << "%, "
     << t.stages << " stages x " << t.replicas << " replicas, schedule " << t.schedule << "\n";
  const LinkUsage* busiest = nullptr;
  for (const auto& l : t.links) {
    if (!busiest || l.busy_s > busiest->busy_s) busiest = &l;
  }
  if (busiest && busiest->busy_s > 0) {
    os << "busiest link " << busiest->name << ": busy " << format_duration(busiest->busy_s) << " ("
       << (t.step_s > 0 ? busiest->busy_s / t.step_s * 100 : 0) << "% of the step), "
       << format_bytes(busiest->bytes) << "\n";
  }
}

}  // namespace slowpipe::netmodel
