// Max-min fair sharing by progressive filling: repeatedly find the resource
// whose remaining capacity divided among its not-yet-fixed flows is smallest,
// fix those flows at that share, subtract, and continue. A start or an end
// only changes the rates of the flows connected to it through shared
// resources, so only that component is recomputed; a class alone on its
// resources gets their smallest capacity (divided among its members) directly.
//
// Flows with the same resource set (a path class) are interchangeable in
// max-min fairness: they always get equal rates. The filling therefore runs
// over classes weighted by their member counts. Progress is kept per class as
// (bits served to each member, time of the last rate change), and a member's
// key is the served total at which it is done, so untouched flows cost
// nothing per event and a class's first finisher is the top of its heap.
// A class whose rate comes out bitwise unchanged is left alone (its finish
// times still hold). The last component search is kept and reused while it
// still covers the change: it is extended when a class touching it becomes
// active, and kept when one empties (it may then span several components,
// whose rates the filling finds independently). Each filling is recorded
// per iteration, and the next one, when only its seeds' member counts
// changed, resumes at the first iteration a seed's resource could change
// (about half of the fixing on a 100,000-flow scenario is skipped this way;
// the result is bitwise the same, see resume_point). Classes are found by a hash
// of their sorted resources; all scratch vectors keep their capacity, so a
// warm network allocates nothing per event (a new path class excepted).
#include "netmodel/internal/flow_network.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace slowpipe::netmodel {
namespace {

uint64_t hash_path(const uint32_t* path, size_t n) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
  for (size_t i = 0; i < n; ++i) {
    h = (h ^ path[i]) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  return h;
}

// std heap order for members: a min-heap on (key, flow).
constexpr auto kMemberAfter = [](const auto& a, const auto& b) {
  return a.key > b.key || (a.key == b.key && a.flow > b.flow);
};

}  // namespace

uint32_t FlowNetwork::add_resource(const std::string& name, double capacity_bps) {
  if (!(capacity_bps > 0)) throw std::invalid_argument("resource '" + name + "': capacity <= 0");
  Resource r;
  r.name = name;
  r.capacity_bps = capacity_bps;
  resources_.push_back(r);
  left_bps_.push_back(0);
  unfixed_.push_back(0);
  queue_pos_.push_back(0);
  return static_cast<uint32_t>(resources_.size() - 1);
}

uint32_t FlowNetwork::start_flow(double now_s, const uint32_t* path, size_t n, double bits) {
  if (n > (1u << 30)) throw std::length_error("flow path of " + std::to_string(n) + " resources");
  for (size_t i = 0; i < n; ++i) {
    if (path[i] >= resources_.size()) throw std::out_of_range("flow path: unknown resource");
  }
  const uint32_t c = find_or_add_class(path, n);
  uint32_t id;
  if (!free_ids_.empty()) {
    id = free_ids_.back();
    free_ids_.pop_back();
  } else {
    id = static_cast<uint32_t>(flows_.size());
    flows_.emplace_back();
  }
  PathClass& pc = classes_[c];
  const bool was_empty = pc.members.empty();
  if (was_empty) {
    activate_class(c, now_s);
  } else {
    advance_class(pc, now_s);
  }
  const double flow_bits = std::max(0.0, bits);
  Flow& f = flows_[id];
  f.path_class = c;
  f.active = true;
  f.rate_bps = 0;
  f.seq = next_seq_++;
  for (uint32_t k = 0; k < pc.path_len; ++k) {
    Resource& res = resources_[class_paths_[pc.path_begin + k]];
    if (res.active++ == 0) res.busy_since_s = now_s;
    res.carried_bits += flow_bits;
  }
  pc.members.push_back({pc.infinite ? now_s : pc.served_bits + flow_bits, id});
  std::push_heap(pc.members.begin(), pc.members.end(), kMemberAfter);
  if (was_empty) join_cached_component(c);
  ++active_flows_;
  update_finish(c);  // the newcomer may end first, even if the rates stay
  seed_classes_.assign(1, c);
  recompute(now_s);
  return id;
}

void FlowNetwork::collect_finished(double now_s, std::vector<uint32_t>& done) {
  const double limit_s = now_s + 1e-12 * std::max(1.0, now_s);
  const size_t first = done.size();
  seed_classes_.clear();
  freed_.clear();
  due_.clear();
  finish_.at_most(limit_s, due_);  // in the order of (finish, class)
  for (const uint32_t c : due_) {
    PathClass& pc = classes_[c];
    while (!pc.members.empty() && member_finish_s(pc, pc.members.front().key) <= limit_s) {
      const uint32_t id = pc.members.front().flow;
      std::pop_heap(pc.members.begin(), pc.members.end(), kMemberAfter);
      pc.members.pop_back();
      Flow& f = flows_[id];
      f.active = false;
      f.rate_bps = pc.rate_bps;
      for (uint32_t k = 0; k < pc.path_len; ++k) {
        Resource& res = resources_[class_paths_[pc.path_begin + k]];
        if (--res.active == 0) res.busy_s += now_s - res.busy_since_s;
      }
      done.push_back(id);
      freed_.emplace_back(f.seq, id);
      --active_flows_;
    }
    seed_classes_.push_back(c);
    if (pc.members.empty()) {
      deactivate_class(c);
    } else {  // its next member ends later
      update_finish(c);
    }
  }
  if (done.size() == first) return;
  // Ids go back in start order (the last started is reused first), as before classes.
  std::sort(freed_.begin(), freed_.end());
  for (const auto& [seq, id] : freed_) free_ids_.push_back(id);
  std::sort(done.begin() + static_cast<std::ptrdiff_t>(first), done.end());
  recompute(now_s);
}

uint32_t FlowNetwork::find_or_add_class(const uint32_t* path, size_t n) {
  sorted_path_.assign(path, path + n);
  std::sort(sorted_path_.begin(), sorted_path_.end());
  const uint64_t h = hash_path(sorted_path_.data(), n);
  if (class_slots_.empty()) class_slots_.assign(16, kNone);
  size_t mask = class_slots_.size() - 1;
  size_t slot = h & mask;
  for (; class_slots_[slot] != kNone; slot = (slot + 1) & mask) {
    const PathClass& pc = classes_[class_slots_[slot]];
    if (pc.hash == h && pc.path_len == n &&
        std::equal(sorted_path_.begin(), sorted_path_.end(), class_paths_.begin() + pc.path_begin))
      return class_slots_[slot];
  }
  if (class_paths_.size() + n > UINT32_MAX) throw std::length_error("flow paths: too many");
  PathClass pc;
  pc.path_begin = static_cast<uint32_t>(class_paths_.size());
  pc.path_len = static_cast<uint32_t>(n);
  pc.hash = h;
  pc.infinite = true;
  for (uint32_t r : sorted_path_) pc.infinite &= resources_[r].capacity_bps == kInfinite;
  class_paths_.insert(class_paths_.end(), sorted_path_.begin(), sorted_path_.end());
  const auto c = static_cast<uint32_t>(classes_.size());
  classes_.push_back(std::move(pc));
  class_slots_[slot] = c;
  finish_.resize(classes_.size());
  if (2 * classes_.size() > class_slots_.size()) {  // keep the table at most half full
    class_slots_.assign(2 * class_slots_.size(), kNone);
    mask = class_slots_.size() - 1;
    for (uint32_t k = 0; k < classes_.size(); ++k) {
      size_t s = classes_[k].hash & mask;
      while (class_slots_[s] != kNone) s = (s + 1) & mask;
      class_slots_[s] = k;
    }
  }
  return c;
}

void FlowNetwork::activate_class(uint32_t c, double now_s) {
  PathClass& pc = classes_[c];
  seed_activated_ = true;  // its resources' class lists grow (see resume_point)
  pc.served_bits = 0;
  pc.updated_s = now_s;
  pc.rate_bps = 0;  // its first finish is kInfinite while it is empty
  for (uint32_t k = 0; k < pc.path_len; ++k) {
    const uint32_t r = class_paths_[pc.path_begin + k];
    if (k > 0 && class_paths_[pc.path_begin + k - 1] == r) continue;  // listed twice
    resources_[r].classes.push_back(c);
  }
}

void FlowNetwork::join_cached_component(uint32_t c) {
  // Keep the cached component closed: a class that touches it joins it.
  const PathClass& pc = classes_[c];
  if (!component_valid_ || pc.stamp == component_stamp_) return;
  bool touches = false;
  for (uint32_t k = 0; k < pc.path_len; ++k)
    touches |= resources_[class_paths_[pc.path_begin + k]].stamp == component_stamp_;
  if (!touches) return;
  const size_t from = resource_queue_.size();
  record_valid_ = false;  // the queue grows
  visit_class(c);
  extend_component(from);
}

void FlowNetwork::deactivate_class(uint32_t c) {
  const PathClass& pc = classes_[c];
  for (uint32_t k = 0; k < pc.path_len; ++k) {
    std::vector<uint32_t>& list = resources_[class_paths_[pc.path_begin + k]].classes;
    auto it = std::find(list.begin(), list.end(), c);
    if (it == list.end()) continue;  // a resource listed twice
    *it = list.back();
    list.pop_back();
  }
  finish_.set(c, kInfinite);
  // The cached component may have split; it stays a union of components,
  // which fill to the same rates, until many of its classes were emptied.
  if (pc.stamp == component_stamp_ && ++emptied_in_component_ > component_.size() / 2)
    component_valid_ = false;
}

void FlowNetwork::advance_class(PathClass& pc, double now_s) const {
  const double dt = now_s - pc.updated_s;
  if (!pc.infinite && dt > 0 && pc.rate_bps > 0) pc.served_bits += pc.rate_bps * dt;
  pc.updated_s = now_s;
}

double FlowNetwork::member_finish_s(const PathClass& pc, double key) const {
  if (pc.infinite) return key;  // ends when it starts
  const double remaining_bits = key - pc.served_bits;
  if (remaining_bits <= 0) return pc.updated_s;
  if (!(pc.rate_bps > 0)) return kInfinite;
  return pc.updated_s + remaining_bits / pc.rate_bps;
}

void FlowNetwork::update_finish(uint32_t c) {
  const PathClass& pc = classes_[c];
  finish_.set(c, member_finish_s(pc, pc.members.front().key));
}

void FlowNetwork::recompute(double now_s) {
  ++version_;
  changed_.clear();
  if (seed_classes_.size() == 1 && fix_lone_class(seed_classes_.front(), now_s)) {
    for (uint32_t c : changed_) update_finish(c);
    next_finish_s_ = finish_.min();
    return;
  }
  bool reuse = component_valid_;
  for (uint32_t c : seed_classes_) reuse &= classes_[c].stamp == component_stamp_;
  if (!reuse) find_component();
  // New rates; a class whose rate changes is brought up to now at its old
  // rate first, and its first finish moves.
  fill(now_s);
  for (uint32_t c : changed_) update_finish(c);
  next_finish_s_ = finish_.min();
}

// The classes reachable from the seeds through shared resources (component_;
// those without members are skipped), and their resources (resource_queue_).
void FlowNetwork::find_component() {
  component_stamp_ = ++stamp_;
  record_valid_ = false;  // queue positions change
  component_.clear();
  resource_queue_.clear();
  for (uint32_t c : seed_classes_) visit_class(c);
  extend_component(0);
  component_valid_ = true;
  emptied_in_component_ = 0;
}

void FlowNetwork::visit_class(uint32_t c) {
  PathClass& pc = classes_[c];
  if (pc.stamp == component_stamp_) return;
  pc.stamp = component_stamp_;
  component_.push_back(c);
  for (uint32_t k = 0; k < pc.path_len; ++k) {
    const uint32_t r = class_paths_[pc.path_begin + k];
    if (resources_[r].stamp != component_stamp_) {
      resources_[r].stamp = component_stamp_;
      queue_pos_[r] = static_cast<uint32_t>(resource_queue_.size());
      resource_queue_.push_back(r);
    }
  }
}

void FlowNetwork::extend_component(size_t from) {
  for (size_t q = from; q < resource_queue_.size(); ++q) {
    for (uint32_t c : resources_[resource_queue_[q]].classes) visit_class(c);
  }
}

// A class with members that is the only one on each of its resources (a
// pipeline's message, a shard on its own link) gets their smallest capacity
// divided among its members, as fill would give it, without the component
// search or the filling (whose cached component may span many such classes).
bool FlowNetwork::fix_lone_class(uint32_t c, double now_s) {
  const PathClass& pc = classes_[c];
  if (pc.members.empty()) return false;
  double cap = kInfinite;
  for (uint32_t k = 0; k < pc.path_len; ++k) {
    const Resource& res = resources_[class_paths_[pc.path_begin + k]];
    if (res.classes.size() != 1) return false;
    cap = std::min(cap, res.capacity_bps);
  }
  ++fill_stamp_;
  record_valid_ = false;  // c's member count changed without a filling
  fix_log_.clear();
  const auto n = static_cast<double>(pc.members.size());
  fix_class(c, pc.path_len == 0 ? kInfinite : cap / n, now_s);
  return true;
}

// Fast path: a class that shares none of its resources with another class
// splits its path's smallest capacity (the common case of a pipeline). It
// is the only class on each of its resources, the first one included.
void FlowNetwork::fix_alone_classes(double now_s) {
  const uint64_t fixed = fill_stamp_;
  const double* const left = left_bps_.data();
  const uint32_t* const unfixed = unfixed_.data();
  const uint32_t* const paths = class_paths_.data();
  for (uint32_t r : resource_queue_) {
    if (resources_[r].classes.size() != 1) continue;
    const uint32_t c = resources_[r].classes.front();
    const PathClass& pc = classes_[c];
    if (pc.fixed == fixed) continue;
    const auto n = static_cast<uint32_t>(pc.members.size());
    const uint32_t* const path = paths + pc.path_begin;
    bool alone = true;
    double cap = kInfinite;
    for (uint32_t k = 0; k < pc.path_len && alone; ++k) {
      alone = unfixed[path[k]] == n;
      cap = std::min(cap, left[path[k]]);
    }
    if (alone) fix_class(c, cap / n, now_s);
  }
}

void FlowNetwork::fill(double now_s) {
  ++fill_stamp_;
  const size_t from = resume_point();
  if (from == 0) {
    start_filling(now_s);
  } else {
    restore_iteration(from);
    ++resumed_fillings_;
  }
  live_share_.resize(live_.size());
  record_valid_ = fill_iterations(from, now_s);
  seed_activated_ = false;
}

void FlowNetwork::start_filling(double now_s) {
  iters_.clear();
  iter_live_.clear();
  fix_log_.clear();
  double* const left = left_bps_.data();
  uint32_t* const unfixed = unfixed_.data();
  // Every flow crossing a resource of the component is in the component.
  for (uint32_t r : resource_queue_) {
    left[r] = resources_[r].capacity_bps;
    unfixed[r] = resources_[r].active;
  }
  // A class that crosses nothing is unconstrained; it is only ever a seed
  // (no resource joins it to anything), and its rate never changes after.
  for (uint32_t c : seed_classes_) {
    if (classes_[c].path_len == 0 && !classes_[c].members.empty()) fix_class(c, kInfinite, now_s);
  }
  fix_alone_classes(now_s);
  live_.clear();
  for (uint32_t r : resource_queue_) {
    if (unfixed[r] > 0) live_.push_back(r);
  }
}

// Since the record, only the seeds' member counts changed (anything else
// clears record_valid_; a seed that became empty, or stopped being empty,
// also left or joined its resources' class lists), so only their resources'
// unfixed differ, by seed_deltas_; their left are the same until a seed is
// fixed. An iteration whose start had every seed resource's fair share
// above its limit, with the old counts and the new, chose the same share
// and fixed the same classes in the same order, fixing no seed (a seed is
// fixed only at a bottleneck it crosses, and only a bottleneck's class list
// is read): the new filling's state at the first iteration that fails this
// is the record's, with the new counts on the seeds' resources. Nothing on
// a seed's resources may be fixed before the first iteration either, in
// the old filling or the new: no seed crosses nothing, and each seed
// resource has had two classes or more (fix_alone_classes needs one).
size_t FlowNetwork::resume_point() {
  if (!record_valid_ || !resume_enabled_ || iters_.size() < 2) return 0;
  // A start's seed that was empty is new on its resources' lists.
  const size_t min_classes = seed_activated_ ? 3 : 2;
  seed_deltas_.clear();
  for (uint32_t c : seed_classes_) {
    const PathClass& pc = classes_[c];
    if (pc.path_len == 0) return 0;
    for (uint32_t k = 0; k < pc.path_len; ++k) {
      const uint32_t r = class_paths_[pc.path_begin + k];
      if (resources_[r].classes.size() < min_classes) return 0;
      auto same = [r](const auto& d) { return d.first == r; };
      if (std::any_of(seed_deltas_.begin(), seed_deltas_.end(), same)) continue;
      // The first iteration's unfixed of a seed's resource is its old flow count.
      const int64_t delta = int64_t{resources_[r].active} - iter_unfixed_[queue_pos_[r]];
      seed_deltas_.emplace_back(r, delta);
    }
  }
  const size_t queue = resource_queue_.size();
  const size_t last = iters_.size() - 1;  // the record's final iteration fixed nothing
  for (size_t j = 0; j < last; ++j) {
    const double limit = iters_[j].limit;
    for (const auto& [r, delta] : seed_deltas_) {
      const size_t at = j * queue + queue_pos_[r];
      const double left = std::max(0.0, iter_left_[at]);
      const int64_t before = iter_unfixed_[at], after = before + delta;
      if (before <= 0 || after <= 0) return j;
      if (left / static_cast<double>(before) <= limit) return j;
      if (left / static_cast<double>(after) <= limit) return j;
    }
  }
  return last;
}

// The state at the start of recorded iteration k (k > 0), with the seeds'
// new counts; the record keeps its first k iterations, updated to them.
void FlowNetwork::restore_iteration(size_t k) {
  const size_t queue = resource_queue_.size();
  for (const auto& [r, delta] : seed_deltas_) {
    for (size_t j = 0; j <= k; ++j) iter_unfixed_[j * queue + queue_pos_[r]] += delta;
  }
  const FillIteration it = iters_[k];
  live_.assign(iter_live_.begin() + it.live_begin, iter_live_.begin() + it.live_end);
  for (uint32_t r : live_) {
    left_bps_[r] = iter_left_[k * queue + queue_pos_[r]];
    unfixed_[r] = iter_unfixed_[k * queue + queue_pos_[r]];
  }
  // The classes fixed before it keep their rates: they are only marked.
  for (size_t i = 0; i < it.fixed_end; ++i) classes_[fix_log_[i]].fixed = fill_stamp_;
  iters_.resize(k);
  iter_live_.resize(it.live_begin);
  fix_log_.resize(it.fixed_end);
}

// Where iteration `iter` records left and unfixed: the record, or scratch
// once the record would pass kMaxRecord entries (a large component filled
// in many iterations: iterations x resources); returns whether recorded.
bool FlowNetwork::record_slots(size_t iter, double*& left, uint32_t*& unfixed) {
  constexpr size_t kMaxRecord = size_t{1} << 20;
  const size_t queue = resource_queue_.size();
  const bool recorded = (iter + 1) * queue <= kMaxRecord;
  std::vector<double>& lefts = recorded ? iter_left_ : unrecorded_left_;
  std::vector<uint32_t>& unfixeds = recorded ? iter_unfixed_ : unrecorded_unfixed_;
  const size_t at = recorded ? iter * queue : 0;
  if (lefts.size() < at + queue) {
    lefts.resize(at + queue);
    unfixeds.resize(at + queue);
  }
  left = lefts.data() + at;
  unfixed = unfixeds.data() + at;
  return recorded;
}

// Progressive filling from iteration `iter` on, recording each iteration;
// returns whether all were recorded.
bool FlowNetwork::fill_iterations(size_t iter, double now_s) {
  const uint64_t fixed = fill_stamp_;
  double* const left = left_bps_.data();
  uint32_t* const unfixed = unfixed_.data();
  auto fair_share = [left, unfixed](uint32_t r) { return std::max(0.0, left[r]) / unfixed[r]; };
  bool recorded = true;
  for (;; ++iter) {
    double* snap_left;
    uint32_t* snap_unfixed;
    recorded &= record_slots(iter, snap_left, snap_unfixed);
    FillIteration it;
    it.live_begin = static_cast<uint32_t>(iter_live_.size());
    iter_live_.insert(iter_live_.end(), live_.begin(), live_.end());
    it.live_end = static_cast<uint32_t>(iter_live_.size());
    it.fixed_end = static_cast<uint32_t>(fix_log_.size());
    // The bottleneck: smallest fair share among resources with unfixed flows.
    double share = kInfinite;
    size_t keep = 0;
    for (uint32_t r : live_) {
      snap_left[queue_pos_[r]] = left[r];
      snap_unfixed[queue_pos_[r]] = unfixed[r];
      if (unfixed[r] == 0) continue;
      const double x = fair_share(r);
      live_share_[keep] = x;
      live_[keep++] = r;
      share = std::min(share, x);
    }
    live_.resize(keep);
    it.limit = share * (1 + 1e-12);
    iters_.push_back(it);
    if (keep == 0) break;      // every class with resources is fixed
    if (share == kInfinite) {  // only infinite resources left
      for (uint32_t r : live_) {
        for (uint32_t c : resources_[r].classes) {
          if (classes_[c].fixed != fixed) fix_class(c, kInfinite, now_s);
        }
      }
      break;
    }
    fix_bottlenecks(share, it.limit, now_s);
  }
  return recorded;
}

// Fixes every unfixed class that crosses a resource at the bottleneck share
// (fixing a class only raises the fair share of its other resources).
void FlowNetwork::fix_bottlenecks(double share, double limit, double now_s) {
  const uint64_t fixed = fill_stamp_;
  const double* const left = left_bps_.data();
  uint32_t* const unfixed = unfixed_.data();
  for (size_t i = 0; i < live_.size(); ++i) {
    const uint32_t r = live_[i];
    if (live_share_[i] > limit || unfixed[r] == 0) continue;
    if (std::max(0.0, left[r]) / unfixed[r] > limit) continue;
    for (uint32_t c : resources_[r].classes) {
      if (classes_[c].fixed != fixed) fix_class(c, share, now_s);
    }
  }
}

// Fixes class c's rate and takes its members' bandwidth off its resources.
inline void FlowNetwork::fix_class(uint32_t c, double rate_bps, double now_s) {
  PathClass& pc = classes_[c];
  pc.fixed = fill_stamp_;
  fix_log_.push_back(c);
  if (rate_bps != pc.rate_bps) {
    advance_class(pc, now_s);
    pc.rate_bps = rate_bps;
    changed_.push_back(c);
  }
  const auto n = static_cast<uint32_t>(pc.members.size());
  const double used_bps = rate_bps * n;
  const uint32_t* const path = class_paths_.data() + pc.path_begin;
  double* const left = left_bps_.data();
  uint32_t* const unfixed = unfixed_.data();
  for (uint32_t k = 0, len = pc.path_len; k < len; ++k) {
    const uint32_t r = path[k];
    left[r] -= used_bps;
    unfixed[r] -= n;
  }
}

void FlowNetwork::reset() {
  for (Resource& r : resources_) {
    r.active = 0;
    r.classes.clear();
    r.busy_s = 0;
    r.busy_since_s = 0;
    r.carried_bits = 0;
  }
  freed_.clear();
  for (PathClass& pc : classes_) {
    for (const Member& m : pc.members) {
      Flow& f = flows_[m.flow];
      f.active = false;
      f.rate_bps = pc.rate_bps;
      freed_.emplace_back(f.seq, m.flow);
    }
    pc.members.clear();
  }
  finish_.clear();
  component_valid_ = false;
  record_valid_ = false;
  std::sort(freed_.begin(), freed_.end());
  for (const auto& [seq, id] : freed_) free_ids_.push_back(id);
  active_flows_ = 0;
  next_finish_s_ = kInfinite;
  ++version_;
}

}  // namespace slowpipe::netmodel
