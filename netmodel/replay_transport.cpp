// Messages as flows, connections as FIFO queues (replay_transport.h).
#include "netmodel/internal/replay_transport.h"

#include <cmath>

namespace slowpipe::netmodel {
namespace {

// splitmix64: a tiny, portable, seedable generator (std distributions differ
// between standard libraries; this keeps timelines identical everywhere).
uint64_t next_u64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

Transport::Transport(const NetConfig& config, int stages, int replicas, Folding folding)
    : topology_(config, stages, replicas, network_, folding) {}

void Transport::reset(EventEngine& engine, const NetConfig& config, uint64_t* rng,
                      std::vector<OpTiming>& timing) {
  network_.reset();
  wake_version_ = ~0ull;
  engine_ = &engine;
  config_ = &config;
  rng_ = rng;
  timing_ = &timing;
  messages_.clear();
  // Connections are device pairs: the index stays from step to step (the
  // same pairs talk every step), only their queues start empty.
  for (Connection& conn : connections_) {
    conn.busy = false;
    conn.queue.clear();
    conn.head = 0;
  }
}

uint32_t Transport::connection(int from_device, int to_device, ConnectionKind kind) {
  const uint64_t key = (static_cast<uint64_t>(from_device) << 34) |
                       (static_cast<uint64_t>(to_device) << 2) | static_cast<uint64_t>(kind);
  const auto [it, added] =
      connection_index_.emplace(key, static_cast<uint32_t>(connections_.size()));
  if (added) connections_.emplace_back();
  return it->second;
}

double Transport::jitter_s() {
  if (config_->jitter_s <= 0) return 0;
  const double u = static_cast<double>(next_u64(*rng_) >> 11) * 0x1.0p-53;  // [0, 1)
  return -config_->jitter_s * std::log1p(-u);
}

void Transport::schedule_wake() {
  const double t = network_.next_finish_s();
  if (std::isinf(t) || wake_version_ == network_.version()) return;
  wake_version_ = network_.version();
  engine_->schedule(t, kNetWake, 0, wake_version_);
}

uint32_t Transport::send(Message m, int from_device, int to_device, ConnectionKind kind,
                         int host_from, int host_to, double bytes) {
  m.connection = connection(from_device, to_device, kind);
  messages_.push_back(m);
  const auto msg_id = static_cast<uint32_t>(messages_.size() - 1);
  const Route& route = topology_.route(host_from, host_to);
  if (route.local) {
    messages_[msg_id].latency_s = 0;
    engine_->schedule(engine_->now(), kArrival, msg_id);
    return msg_id;
  }
  Connection& conn = connections_[m.connection];
  if (conn.busy) {
    conn.queue.push_back({msg_id, &route, bytes});
    return msg_id;
  }
  start_flow(msg_id, route, bytes);
  return msg_id;
}

void Transport::start_flow(uint32_t msg_id, const Route& route, double bytes) {
  Message& msg = messages_[msg_id];
  connections_[msg.connection].busy = true;
  msg.latency_s = route.latency_s + config_->overhead_s + jitter_s();
  const double bits = 8.0 * (bytes + config_->overhead_bytes);
  const uint32_t flow = network_.start_flow(engine_->now(), route.path, route.length, bits);
  if (flow_message_.size() <= flow) flow_message_.resize(flow + 1);
  flow_message_[flow] = msg_id;
  if (msg.op != -1) (*timing_)[msg.op].start_s = engine_->now();
  schedule_wake();
}

void Transport::on_wake(uint64_t version) {
  if (version != network_.version()) return;  // stale: rates changed since
  finished_.clear();
  network_.collect_finished(engine_->now(), finished_);
  // Map flows to messages first: starting a queued message may reuse a flow id.
  for (uint32_t& flow : finished_) flow = flow_message_[flow];
  for (uint32_t msg : finished_) {
    engine_->schedule(engine_->now() + messages_[msg].latency_s, kArrival, msg);
    Connection& conn = connections_[messages_[msg].connection];
    conn.busy = false;
    if (conn.head < conn.queue.size()) {
      const Pending next = conn.queue[conn.head++];
      if (conn.head == conn.queue.size()) {
        conn.queue.clear();
        conn.head = 0;
      }
      start_flow(next.message, *next.route, next.bytes);
    }
  }
  schedule_wake();
}

}  // namespace slowpipe::netmodel
