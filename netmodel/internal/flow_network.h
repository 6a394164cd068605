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
//
// Scaling: flows with the same set of resources (a *path class*) always get
// the same max-min rate, so the filling runs over classes weighted by their
// member counts, not over flows; a class keeps its progress as bits served
// per member and its members in a heap keyed by the served total at which
// each is done; each class's first finish sits in a FinishIndex.
// Cost of one update (a start, or a collect that removes flows), with K the
// path classes connected to the change, R_K their resources, L a path's
// length, B <= R_K the distinct bottleneck shares, C the classes seen and
// M <= |K| the finish index's blocks whose minimum rose:
//   O(sum over K of L  +  R_K * B  +  |K|  +  C / 64  +  64 M)
// plus, per flow started or removed, O(L log L + log n) (n: flows in its
// class). It does not grow with the number of flows in flight (before path
// classes: O(F_K * L * B + F) with F_K the flows connected to the change and
// F all flows in flight). The component search, O(sum over K of L), is
// skipped while the cached one still holds, and the filling resumes from the
// last one's record where only the seeds' member counts changed (the record:
// O(iterations x R_K) memory, at most 2^20 entries). See docs/netmodel.md.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "netmodel/internal/finish_index.h"

namespace slowpipe::netmodel {

class FlowNetwork {
 public:
  static constexpr double kInfinite = std::numeric_limits<double>::infinity();

  // Adds a resource; returns its index. `capacity_bps` may be kInfinite.
  uint32_t add_resource(const std::string& name, double capacity_bps);
  size_t resource_count() const { return resources_.size(); }
  const std::string& resource_name(uint32_t r) const { return resources_[r].name; }
  double capacity_bps(uint32_t r) const { return resources_[r].capacity_bps; }

  // Starts a flow at `now_s` (>= the time of the previous call) sending `bits`
  // over the resources `path[0..n)` (any length, any order; each resource at
  // most once); returns the flow id (ids are reused after a flow is
  // collected, the last collected first). Rates of the flows connected to it
  // are recomputed.
  uint32_t start_flow(double now_s, const uint32_t* path, size_t n, double bits);
  // The earliest time at which an active flow finishes (kInfinite if none).
  double next_finish_s() const { return next_finish_s_; }
  // Collects the flows that have finished by `now_s` (to 1e-12 relative) into
  // `done` (appending, in increasing id order), removes them and recomputes
  // the rates.
  void collect_finished(double now_s, std::vector<uint32_t>& done);
  // Bumped whenever rates change: stamp wake-up events with it, drop stale ones.
  uint64_t version() const { return version_; }

  size_t active_flows() const { return active_flows_; }
  // The flow's current rate; after it was collected, its last rate.
  double rate_bps(uint32_t flow) const {
    const Flow& f = flows_[flow];
    return f.active ? classes_[f.path_class].rate_bps : f.rate_bps;
  }
  // Seconds during which at least one flow crossed resource `r` (intervals
  // closed by the last collect call), and bits carried in total.
  double busy_s(uint32_t r) const { return resources_[r].busy_s; }
  double carried_bits(uint32_t r) const { return resources_[r].carried_bits; }

  // Drops all flows and statistics; keeps the resources.
  void reset();
  // Whether a filling may resume the last one's record (on by default); the
  // tests compare the rates with and without it, which must be bitwise equal.
  void set_resume_filling(bool on) { resume_enabled_ = on; }
  size_t resumed_fillings() const { return resumed_fillings_; }  // so far, for the tests

 private:
  static constexpr uint32_t kNone = ~0u;

  struct Resource {
    std::string name;
    double capacity_bps = kInfinite;
    uint32_t active = 0;            // flows crossing it
    std::vector<uint32_t> classes;  // path classes with members crossing it
    uint64_t stamp = 0;             // visit mark of the component search
    double busy_since_s = 0;
    double busy_s = 0;
    double carried_bits = 0;
  };
  struct Member {
    double key;  // finite class: bits served to the class when this flow is done;
                 // infinite class: the time the flow started (it ends at once)
    uint32_t flow;
  };
  // The flows crossing one set of resources. Progress is kept per class as
  // `served_bits`, the bits each member has received since the class was last
  // empty, as of `updated_s` (the last change of its rate); a member is done
  // when served_bits reaches its key.
  // The fields the filling reads come first, in one 64-byte line.
  struct alignas(64) PathClass {
    uint64_t fixed = 0;       // == fill_stamp_ once its rate is fixed in this filling
    uint32_t path_begin = 0;  // into class_paths_: the sorted resources
    uint32_t path_len = 0;
    double rate_bps = 0;          // of each member
    std::vector<Member> members;  // min-heap on (key, flow)
    bool infinite = false;        // every resource infinite (or none): rate kInfinite
    double served_bits = 0;
    double updated_s = 0;
    uint64_t stamp = 0;  // visit mark of the component search
    uint64_t hash = 0;
  };
  struct Flow {
    uint32_t path_class = 0;
    bool active = false;
    double rate_bps = 0;  // when collected
    uint64_t seq = 0;     // start order: ids are freed in this order
  };

  uint32_t find_or_add_class(const uint32_t* path, size_t n);
  void activate_class(uint32_t c, double now_s);
  void join_cached_component(uint32_t c);
  void deactivate_class(uint32_t c);
  void advance_class(PathClass& pc, double now_s) const;
  double member_finish_s(const PathClass& pc, double key) const;
  void update_finish(uint32_t c);
  // Recomputes the rates of the classes connected (through shared resources)
  // to the classes in seed_classes_.
  void recompute(double now_s);
  void find_component();
  void visit_class(uint32_t c);
  void extend_component(size_t from);  // the search from resource_queue_[from]
  void fill(double now_s);             // progressive filling over component_
  void start_filling(double now_s);    // fill's state before its first iteration
  size_t resume_point();               // the recorded iteration fill may resume at; 0: none
  void restore_iteration(size_t k);
  bool record_slots(size_t iter, double*& left, uint32_t*& unfixed);
  bool fill_iterations(size_t iter, double now_s);
  void fix_bottlenecks(double share, double limit, double now_s);
  void fix_alone_classes(double now_s);  // fill's fast path: classes alone on their resources
  bool fix_lone_class(uint32_t c, double now_s);  // recompute's fast path for one seed
  void fix_class(uint32_t c, double rate_bps, double now_s);

  std::vector<Resource> resources_;
  // Per resource, scratch of progressive filling, kept apart from Resource and
  // as two arrays (the hot loop indexes each with one scaled address).
  std::vector<double> left_bps_;    // (resources) capacity not yet given out
  std::vector<uint32_t> unfixed_;   // (resources) flows not yet fixed
  std::vector<PathClass> classes_;  // never removed: a path seen once is likely seen again
  std::vector<uint32_t> class_paths_;
  std::vector<uint32_t> class_slots_;  // open-addressing hash of classes by path (kNone: empty)
  FinishIndex finish_;                 // (classes) first finish of each, kInfinite if empty
  std::vector<Flow> flows_;
  std::vector<uint32_t> free_ids_;
  size_t active_flows_ = 0;
  uint64_t next_seq_ = 0;
  uint64_t fill_stamp_ = 0;
  // The last component search, reused for seeds it visited: a union of
  // components, extended when a class touching it becomes active.
  bool component_valid_ = false;
  uint64_t component_stamp_ = 0;
  size_t emptied_in_component_ = 0;  // its classes emptied since the search
  // scratch
  std::vector<uint32_t> sorted_path_, seed_classes_, due_, component_, resource_queue_, live_,
      changed_;
  std::vector<double> live_share_;   // fair share of live_[i] at a level's start
  std::vector<uint32_t> queue_pos_;  // (resources) index in resource_queue_
  // The last filling's record: at each iteration's start, live_ and the left
  // and unfixed of its resources, and how many classes were fixed before it
  // (fix_log_). When only the seeds' member counts changed since, the next
  // filling makes the same choices up to the first iteration where a seed's
  // resource could be a bottleneck, and resumes there (see resume_point).
  struct FillIteration {
    double limit = 0;         // the bottleneck share's tolerance (unused in the last)
    uint32_t live_begin = 0;  // live_ in iter_live_
    uint32_t live_end = 0;
    uint32_t fixed_end = 0;  // in fix_log_
  };
  std::vector<FillIteration> iters_;
  std::vector<uint32_t> iter_live_;
  std::vector<double> iter_left_;        // (iterations x resource_queue_) by queue_pos_
  std::vector<uint32_t> iter_unfixed_;   // (iterations x resource_queue_)
  std::vector<double> unrecorded_left_;  // (resource_queue_) iterations past the record's size
  std::vector<uint32_t> unrecorded_unfixed_;
  std::vector<uint32_t> fix_log_;  // classes in the order fix_class fixed them
  std::vector<std::pair<uint32_t, int64_t>> seed_deltas_;  // (resource, change of its flows)
  bool record_valid_ = false;    // false after any change but the seeds' member counts
  bool seed_activated_ = false;  // since the last filling (a start's seed was empty)
  bool resume_enabled_ = true;
  size_t resumed_fillings_ = 0;
  std::vector<std::pair<uint64_t, uint32_t>> freed_;  // (seq, id) of collected flows
  uint64_t stamp_ = 0;
  double next_finish_s_ = kInfinite;
  uint64_t version_ = 0;
};

}  // namespace slowpipe::netmodel
