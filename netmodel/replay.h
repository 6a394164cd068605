// Replay: one step's op trace + the schedule's dependencies + the network and
// compute models -> a timeline (start and end of every op, busy time of every
// link direction, bubble fraction, step time).
//
// Semantics (see trace.h for the dependency rules):
//  * each (replica, stage) device is one serial compute stream that runs its
//    ops in trace order; an op waits (and blocks the stream) until its inputs
//    are there;
//  * a send first occupies the sender's stream for its encode time, then the
//    message goes on the wire asynchronously: the sender carries on computing;
//  * on the wire a message is a flow over its route (max-min fair share of each
//    link direction), delivered latency (+ overhead, + jitter) after its last
//    bit left; the consumer op first spends the decode time on its stream;
//  * the messages of one connection (a sender, a receiver, one kind) leave in
//    order, one after another, as over one TCP connection: a message waits
//    for the previous one's last bit; different connections share fairly;
//  * all-reduce: after the encode, each replica joins; when all D have joined,
//    a ring all-reduce runs 2(D-1) steps, each replica sending bytes/D to its
//    successor and starting step k+1 when step k's chunk arrived; the decode
//    time is spent before the optimizer. D = 1: completes at once. With
//    StepTrace::sharded_exchange (compress.grad_sync = momentum) the collective
//    is a sharded parameter-server exchange instead: each replica sends bytes/D
//    to every other replica (the servers of the other shards); a server that
//    has all D-1 shards sends bytes/D (of its own message) back to every other
//    replica; a replica completes once it has served its shard and received
//    the D-1 averages.
//
// Replica-symmetric replay (docs/netmodel.md): where turning the cluster by
// one replica maps it onto itself (no jitter, net.links repeated on every
// replica, and every replica running the same ops: replica_symmetry.h), all
// replicas see the same step at the same times, and the replay follows
// replica 0 alone: its devices, and one flow and one resource for each set of
// D flows or resources that the turn maps onto each other (folded topology,
// topology.h). The max-min shares, hence the times, are those of the full
// replay (to rounding, ~1e-15 relative); the cost of a step no longer grows
// with D but for the collective (2(D-1) ring steps or D-1 shards a chunk).
// A full trace's timeline is then spread back to every replica; a compact
// trace (StepTrace::replicated) gets a compact timeline.
// Leaves out: memory limits, compute/communication contention on one device,
// per-step codec time of a compressed all-reduce beyond one encode and decode.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "netmodel/net_config.h"
#include "netmodel/trace.h"

namespace slowpipe::netmodel {

class ComputeModel;
class StepLoop;

struct OpTiming {
  // forward/backward/optimizer: compute interval; send: first bit on the wire
  // (after queueing behind earlier messages of its connection) to delivery; all-reduce: join (after
  // encode) to completion at this replica.
  double start_s = 0;
  double end_s = 0;
  double encode_start_s = 0, encode_end_s = 0;  // sends, all-reduce: on the sender
  double decode_start_s = 0, decode_end_s = 0;  // consumer side, before the consumer op
};

struct LinkUsage {
  std::string name;  // "link3->4", "nic2.out"
  double busy_s = 0;
  double bytes = 0;
};

struct Timeline {
  int32_t stages = 1;
  int32_t replicas = 1;
  std::string schedule;
  std::vector<TraceOp> ops;      // the replayed trace ops
  std::vector<OpTiming> timing;  // parallel to ops
  std::vector<LinkUsage> links;
  std::vector<double> device_busy_s;      // [replicas * stages]: compute + codec
  std::vector<int32_t> peak_activations;  // [replicas * stages]: forwards awaiting backward
  double step_s = 0;
  double bubble_fraction = 0;  // 1 - busy / (devices x step_s)
  uint64_t events = 0;         // engine events processed (only replica 0's, folded)
  // Compact: ops, timing, device_busy_s, peak_activations and links are
  // replica 0's (resources leaving its hosts) and stand for every replica's,
  // each of which is the same (a compact trace, replayed folded). Otherwise
  // everything is listed; after a folded replay the links come replica by
  // replica, not in the order the full replay creates them.
  bool replicated = false;
};

// Holds the network, the compute model and the jitter random stream across
// steps: replaying the same traces with the same seed gives identical timelines.
class Simulator {
 public:
  // `fold_replicas` = false: always the full replay (the reference of the
  // replica-symmetric one in the tests and benchmarks).
  explicit Simulator(const NetConfig& config, bool fold_replicas = true);
  ~Simulator();
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  // Throws DataError if the trace is inconsistent (stage out of range, ops
  // that can never run).
  Timeline replay(const StepTrace& trace);
  const NetConfig& config() const { return config_; }
  // Sum of the step times replayed so far: the simulated wall-clock time of
  // the run (the `sim_time_s` column).
  double elapsed_s() const { return elapsed_s_; }
  uint64_t steps() const { return steps_; }
  // Whether the last replay followed replica 0 alone (replica-symmetric).
  bool folded() const { return folded_; }
  // Why the replicas of the last replay's network were not interchangeable
  // ("" when they were, or with one replica).
  const std::string& asymmetry() const { return asymmetry_; }
  // All that carries from one replayed step to the next (the jitter stream
  // and the clock), so a resumed run continues the same simulated timeline.
  // The compute model's state (calibration samples) travels as text.
  struct Carry {
    uint64_t rng_state = 0;
    double elapsed_s = 0;
    uint64_t steps = 0;
    std::string compute_state;
  };
  Carry carry() const;
  // Throws DataError when the compute state does not fit this model.
  void restore(const Carry& c);
  // What the compute model assumed (calibrated seconds, device constants), as
  // JSON for the run log (`calibration` blob, docs/hdf5-schema.md).
  std::string compute_description() const;

 private:
  Timeline run_step(const StepTrace& trace, const StepTrace& observed);

  NetConfig config_;
  std::unique_ptr<ComputeModel> compute_;
  std::unique_ptr<StepLoop> loop_;  // remade when the stages, replicas or folding change
  bool fold_replicas_ = true;
  bool folded_ = false;
  int symmetry_stages_ = 0, symmetry_replicas_ = 0;  // what asymmetry_ was found for
  std::string asymmetry_;
  uint64_t rng_state_;
  double elapsed_s_ = 0;
  uint64_t steps_ = 0;
};

// A one-off replay with a fresh simulator.
Timeline replay(const StepTrace& trace, const NetConfig& config);

// The timeline's stage/replica layout as a short multi-line summary (step time,
// bubble, busiest link).
void print_summary(const Timeline& timeline, std::ostream& os);

}  // namespace slowpipe::netmodel
