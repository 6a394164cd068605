// The replay's event loop for one step: each (replica, stage) device is a
// serial compute stream running its ops in trace order, an op waiting (and
// blocking its stream) until its inputs are there (StepOps::ready); sends
// spend their encode on the stream and then go to the transport; decodes are
// spent on the consumer's stream before the consumer op. Events: a compute
// finished, the network's next flow finished, a message arrived. Fills the
// Timeline's op timings, device busy time and peak activations; the caller
// (replay.cpp) sums up step time, bubble and link use afterwards. Under
// net.link_model = shared-inbound a send is posted, then billed to its
// receiver's inbound wire when the receiver waits on it (replay_inbound.h).
// Leaves out: the network itself (replay_transport.h) and the collectives'
// protocol (replay_collective.h).
#pragma once

#include <cstdint>
#include <vector>

#include "netmodel/internal/event_engine.h"
#include "netmodel/internal/replay_collective.h"
#include "netmodel/internal/replay_inbound.h"
#include "netmodel/internal/replay_ops.h"
#include "netmodel/internal/replay_transport.h"
#include "netmodel/replay.h"

namespace slowpipe::netmodel {

class StepLoop {
 public:
  // Folded (`folding` other than kNone; replica-symmetric network and compact
  // traces only): the devices of replica 0 stand for every replica's (replay.h).
  StepLoop(const NetConfig& config, int stages, int replicas, Folding folding)
      : stages_(stages),
        replicas_(replicas),
        folding_(replicas > 1 ? folding : Folding::kNone),
        fold_(folding_ != Folding::kNone),
        inbound_(shared_inbound(config)),
        efficiency_(config.efficiency),
        transport_(config, stages, replicas, folding_),
        collective_(ops_, transport_) {}

  int stages() const { return stages_; }
  int replicas() const { return replicas_; }
  bool folded() const { return fold_; }
  Folding folding() const { return folding_; }
  // The replicas whose devices run: 1 folded, else all.
  int followed_replicas() const { return fold_ ? 1 : replicas_; }
  // Clears the per-step state and indexes `trace` (throws DataError if it is
  // inconsistent); `out` is sized for the trace's ops and devices.
  void prepare(const StepTrace& trace, Timeline& out, const ComputeModel& compute,
               const NetConfig& config, uint64_t& rng);
  // Runs the step's events until every stream is drained; throws DataError
  // when one never drains.
  void run();
  const FlowNetwork& network() const { return transport_.network(); }
  const Topology& topology() const { return transport_.topology(); }
  // The shared-inbound model's wires (net.link_model; nullptr under full-duplex).
  const InboundWires* wires() const { return inbound_ ? &wires_ : nullptr; }
  uint64_t events() const { return engine_.processed(); }

 private:
  void try_start(int d);
  void wake_chunk_neighbours(int r, int c);
  void finish_all_reduce(int r, int c);
  void on_compute_done(int d, int32_t i);
  void on_send(int d, int32_t i);
  void on_arrival(uint32_t msg_id);
  // shared-inbound: bills message op `msg` to its receiver's wire once the
  // receiver waits on it and it is posted.
  void bill_inbound(int32_t msg);
  void on_wire_arrival(int32_t msg);
  void check_drained() const;

  int stages_, replicas_;
  Folding folding_;
  bool fold_;
  bool inbound_;       // net.link_model = shared-inbound
  double efficiency_;  // divides a resource's capacity back to the nominal rate
  EventEngine engine_;
  StepOps ops_;
  Transport transport_;
  Collective collective_;
  InboundWires wires_;
  // per step
  Timeline* out_ = nullptr;
  const ComputeModel* compute_ = nullptr;
  std::vector<size_t> cursor_;       // [device]: its next op in its stream
  std::vector<uint8_t> busy_;        // [device]
  std::vector<uint8_t> done_;        // per op: compute finished / delivered / reduced
  std::vector<int32_t> in_flight_;   // [device]: forwards awaiting their backward
  std::vector<uint8_t> wire_state_;  // shared-inbound, per send op: 1 posted, 2 billed
};

}  // namespace slowpipe::netmodel
