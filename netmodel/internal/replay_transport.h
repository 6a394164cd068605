// The replay's messages on the network: each message is a flow over its route
// in the FlowNetwork (max-min fair shares), delivered latency (+ overhead,
// + jitter) after its last bit left. Messages of one connection (a sender
// device, a receiver device, one kind) leave one after another, as over one
// TCP connection; different connections share the links fairly. A message
// between two devices of one host arrives at once. The transport schedules
// the network's wake-ups (kNetWake) and the arrivals (kArrival) on the step's
// EventEngine; what an arrival means is the event loop's (replay_loop.h).
// Leaves out: the devices, the collectives' protocol (replay_collective.h).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "netmodel/internal/event_engine.h"
#include "netmodel/internal/flow_network.h"
#include "netmodel/net_config.h"
#include "netmodel/replay.h"
#include "netmodel/internal/topology.h"

namespace slowpipe::netmodel {

// The replay's event kinds.
enum ReplayEvent : uint32_t { kComputeDone, kNetWake, kArrival, kWireArrival };

enum class ConnectionKind : uint64_t { kActivations, kGradients, kRing, kExchange };

struct Message {
  bool collective = false;  // a ring step or an exchange shard (else a pipeline send)
  uint8_t shard_phase = 0;  // sharded exchange: 1 = to the shard's server, 2 = back
  int32_t op = -1;          // pipeline send: its op index
  int32_t chunk = 0;        // ring and exchange: chunk, sending replica, step / receiver
  int32_t from = 0;
  int32_t to = 0;
  int32_t step = 0;
  uint32_t connection = 0;
  double latency_s = 0;
};

class Transport {
 public:
  // `folding`: how the topology stands for the cluster (topology.h).
  Transport(const NetConfig& config, int stages, int replicas, Folding folding);

  // Starts a step: no flows, no messages, empty connection queues. `timing`
  // receives the start of each pipeline send's first bit.
  void reset(EventEngine& engine, const NetConfig& config, uint64_t* rng,
             std::vector<OpTiming>& timing);
  // Sends `m` of `bytes` from host_from to host_to over the connection
  // (from_device, to_device, kind); returns the message id.
  uint32_t send(Message m, int from_device, int to_device, ConnectionKind kind, int host_from,
                int host_to, double bytes);
  // A kNetWake event stamped `version`: schedules the arrivals of the flows
  // that finished and starts the messages queued behind them.
  void on_wake(uint64_t version);

  // The latency one message pays over `route`: the route's, the per-message
  // overhead and a jitter draw (the shared-inbound model's, replay_inbound.h).
  double message_latency_s(const Route& route) {
    return route.latency_s + config_->overhead_s + jitter_s();
  }
  double overhead_bits() const { return 8.0 * config_->overhead_bytes; }
  Topology& topology() { return topology_; }

  const Message& message(uint32_t id) const { return messages_[id]; }
  const FlowNetwork& network() const { return network_; }
  const Topology& topology() const { return topology_; }

 private:
  struct Pending {
    uint32_t message;
    const Route* route;
    double bytes;
  };
  struct Connection {
    bool busy = false;
    // FIFO: queue[head..) waits (a vector allocates nothing until used; a
    // deque's first node costs ~0.5 kB for each of the many idle connections).
    std::vector<Pending> queue;
    size_t head = 0;
  };

  uint32_t connection(int from_device, int to_device, ConnectionKind kind);
  double jitter_s();
  void schedule_wake();
  void start_flow(uint32_t msg_id, const Route& route, double bytes);

  FlowNetwork network_;
  Topology topology_;
  // per step
  EventEngine* engine_ = nullptr;
  const NetConfig* config_ = nullptr;
  uint64_t* rng_ = nullptr;
  std::vector<OpTiming>* timing_ = nullptr;
  std::vector<Message> messages_;
  std::vector<Connection> connections_;
  std::unordered_map<uint64_t, uint32_t> connection_index_;  // (from, to, kind) -> connection
  std::vector<uint32_t> flow_message_;
  std::vector<uint32_t> finished_;
  uint64_t wake_version_ = ~0ull;
};

}  // namespace slowpipe::netmodel
