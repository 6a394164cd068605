// The FlowNetwork of commit 075d805 (before path classes), kept verbatim
// under another name as the "before" of the scaling benchmarks: every start
// or end re-runs progressive filling over all flows of the component, so one
// update costs O(flows in the component x path length x bottleneck levels).
// Not used by the simulator; do not extend.
//
// Flow-level bandwidth sharing: max-min fairness over a set of resources.
//
// Model (SimGrid's flow model, without its TCP-window cap and slow-start
// factors): every resource (one direction of a link, a NIC's egress or
// ingress) has a capacity in bit/s; a flow crosses a path of resources; the
// rates are the max-min fair allocation found by progressive filling, and they
// are recomputed whenever a flow starts or ends (only for the flows connected
// to it through shared resources: the others keep theirs). A resource of infinite
// capacity never constrains. Latency is not modelled here: callers add it after
// a flow's bits have left (see replay.h and netsim.h).
// Leaves out: packet loss, congestion-control dynamics (slow start, AIMD),
// per-flow TCP window limits, priorities.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace slowpipe::bench {

class LegacyFlowNetwork {
 public:
  static constexpr double kInfinite = std::numeric_limits<double>::infinity();

  // Adds a resource; returns its index. `capacity_bps` may be kInfinite.
  uint32_t add_resource(const std::string& name, double capacity_bps);
  size_t resource_count() const { return resources_.size(); }
  const std::string& resource_name(uint32_t r) const { return resources_[r].name; }
  double capacity_bps(uint32_t r) const { return resources_[r].capacity_bps; }

  // Starts a flow at `now_s` (>= the time of the previous call) sending `bits`
  // over the resources `path[0..n)` (any length; each resource at most once);
  // returns the flow id (ids are reused after a flow is collected). Rates of
  // the flows connected to it are recomputed.
  uint32_t start_flow(double now_s, const uint32_t* path, size_t n, double bits);
  // The earliest time at which an active flow finishes (kInfinite if none).
  double next_finish_s() const { return next_finish_s_; }
  // Collects the flows that have finished by `now_s` into `done` (appending, in
  // increasing id order), removes them and recomputes the rates.
  void collect_finished(double now_s, std::vector<uint32_t>& done);
  // Bumped whenever rates change: stamp wake-up events with it, drop stale ones.
  uint64_t version() const { return version_; }

  size_t active_flows() const { return active_.size(); }
  double rate_bps(uint32_t flow) const { return flows_[flow].rate_bps; }
  // Seconds during which at least one flow crossed resource `r` (intervals
  // closed by the last collect call), and bits carried in total.
  double busy_s(uint32_t r) const { return resources_[r].busy_s; }
  double carried_bits(uint32_t r) const { return resources_[r].carried_bits; }

  // Drops all flows and statistics; keeps the resources.
  void reset();

 private:
  struct Resource {
    std::string name;
    double capacity_bps = kInfinite;
    uint32_t active = 0;          // flows crossing it
    std::vector<uint32_t> flows;  // their ids
    uint64_t stamp = 0;           // visit mark of the component search
    double busy_since_s = 0;
    double busy_s = 0;
    double carried_bits = 0;
    // scratch for progressive filling
    double left_bps = 0;
    uint32_t unfixed = 0;
  };
  struct Flow {
    uint32_t path_begin = 0;  // into path_storage_: path_cap slots owned by this id
    uint32_t path_len = 0;
    uint32_t path_cap = 0;
    double remaining_bits = 0;  // as of updated_s
    double updated_s = 0;
    double rate_bps = 0;
    double finish_s = kInfinite;
    bool active = false;
    bool fixed = false;
    uint64_t stamp = 0;
  };
  // Slots a new flow id reserves; a longer path moves the id to a new,
  // larger run of slots (the old run is left unused: amortised like a vector).
  static constexpr uint32_t kPathSlots = 16;

  // Recomputes the rates of the flows connected (through shared resources) to
  // the seeds in component_seeds_ (resources) and seed_flow (or none).
  void recompute(double now_s, uint32_t seed_flow);
  static constexpr uint32_t kNoFlow = ~0u;

  std::vector<Resource> resources_;
  std::vector<Flow> flows_;
  std::vector<uint32_t> path_storage_;
  std::vector<uint32_t> free_ids_;
  std::vector<uint32_t> active_;                                        // active flow ids
  std::vector<uint32_t> component_seeds_, component_, resource_queue_;  // scratch
  uint64_t stamp_ = 0;
  double next_finish_s_ = kInfinite;
  uint64_t version_ = 0;
};

}  // namespace slowpipe::bench
