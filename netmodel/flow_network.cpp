// Max-min fair sharing by progressive filling: repeatedly find the resource
// whose remaining capacity divided among its not-yet-fixed flows is smallest,
// fix those flows at that share, subtract, and continue. O(F * (R + path)) per
// recomputation, which is cheap for the few concurrent flows of a pipeline.
#include "netmodel/flow_network.h"

#include <algorithm>
#include <stdexcept>

namespace slowpipe::netmodel {

uint32_t FlowNetwork::add_resource(const std::string& name, double capacity_bps) {
  if (!(capacity_bps > 0)) throw std::invalid_argument("resource '" + name + "': capacity <= 0");
  Resource r;
  r.name = name;
  r.capacity_bps = capacity_bps;
  resources_.push_back(r);
  return static_cast<uint32_t>(resources_.size() - 1);
}

void FlowNetwork::advance(double now_s) {
  const double dt = now_s - last_s_;
  if (dt > 0) {
    for (uint32_t id : active_) {
      Flow& f = flows_[id];
      if (f.rate_bps == kInfinite) {
        f.remaining_bits = 0;
      } else {
        f.remaining_bits = std::max(0.0, f.remaining_bits - f.rate_bps * dt);
      }
    }
  }
  if (now_s > last_s_) last_s_ = now_s;
}

uint32_t FlowNetwork::start_flow(double now_s, const uint32_t* path, size_t n, double bits) {
  if (n > kMaxPath) throw std::invalid_argument("flow path longer than 16 resources");
  advance(now_s);
  uint32_t id;
  if (!free_ids_.empty()) {
    id = free_ids_.back();
    free_ids_.pop_back();
  } else {
    id = static_cast<uint32_t>(flows_.size());
    flows_.emplace_back();
    flows_.back().path_begin = static_cast<uint32_t>(path_storage_.size());
    path_storage_.resize(path_storage_.size() + kMaxPath);
  }
  Flow& f = flows_[id];
  f.path_len = static_cast<uint32_t>(n);
  f.remaining_bits = std::max(0.0, bits);
  f.rate_bps = 0;
  f.active = true;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t r = path[i];
    if (r >= resources_.size()) throw std::out_of_range("flow path: unknown resource");
    path_storage_[f.path_begin + i] = r;
    Resource& res = resources_[r];
    if (res.active++ == 0) res.busy_since_s = now_s;
    res.carried_bits += f.remaining_bits;
  }
  active_.push_back(id);
  recompute(now_s);
  return id;
}

void FlowNetwork::collect_finished(double now_s, std::vector<uint32_t>& done) {
  advance(now_s);
  const double tol = 1e-12 * std::max(1.0, now_s);
  const size_t first = done.size();
  size_t keep = 0;
  for (size_t i = 0; i < active_.size(); ++i) {
    const uint32_t id = active_[i];
    Flow& f = flows_[id];
    if (f.finish_s <= now_s + tol || f.remaining_bits <= 0) {
      f.active = false;
      for (uint32_t k = 0; k < f.path_len; ++k) {
        Resource& res = resources_[path_storage_[f.path_begin + k]];
        if (--res.active == 0) res.busy_s += now_s - res.busy_since_s;
      }
      done.push_back(id);
      free_ids_.push_back(id);
    } else {
      active_[keep++] = id;
    }
  }
  active_.resize(keep);
  std::sort(done.begin() + static_cast<std::ptrdiff_t>(first), done.end());
  if (done.size() > first) recompute(now_s);
}

void FlowNetwork::recompute(double now_s) {
  ++version_;
  for (uint32_t id : active_) {
    Flow& f = flows_[id];
    f.fixed = false;
    for (uint32_t k = 0; k < f.path_len; ++k) {
      Resource& res = resources_[path_storage_[f.path_begin + k]];
      res.left_bps = res.capacity_bps;
      res.unfixed = 0;
    }
  }
  size_t unfixed_flows = 0;
  for (uint32_t id : active_) {
    Flow& f = flows_[id];
    if (f.path_len == 0) {  // crosses nothing: unconstrained
      f.rate_bps = kInfinite;
      f.fixed = true;
      continue;
    }
    ++unfixed_flows;
    for (uint32_t k = 0; k < f.path_len; ++k) ++resources_[path_storage_[f.path_begin + k]].unfixed;
  }
  while (unfixed_flows > 0) {
    // The bottleneck: smallest fair share among resources with unfixed flows.
    double share = kInfinite;
    for (uint32_t id : active_) {
      const Flow& f = flows_[id];
      if (f.fixed) continue;
      for (uint32_t k = 0; k < f.path_len; ++k) {
        const Resource& res = resources_[path_storage_[f.path_begin + k]];
        share = std::min(share, std::max(0.0, res.left_bps) / res.unfixed);
      }
    }
    // Fix every unfixed flow that crosses a resource at that share.
    for (uint32_t id : active_) {
      Flow& f = flows_[id];
      if (f.fixed) continue;
      bool bottlenecked = share == kInfinite;
      for (uint32_t k = 0; k < f.path_len && !bottlenecked; ++k) {
        const Resource& res = resources_[path_storage_[f.path_begin + k]];
        bottlenecked = std::max(0.0, res.left_bps) / res.unfixed <= share * (1 + 1e-12);
      }
      if (!bottlenecked) continue;
      f.rate_bps = share;
      f.fixed = true;
      --unfixed_flows;
      for (uint32_t k = 0; k < f.path_len; ++k) {
        Resource& res = resources_[path_storage_[f.path_begin + k]];
        res.left_bps -= share;
        --res.unfixed;
      }
    }
  }
  next_finish_s_ = kInfinite;
  for (uint32_t id : active_) {
    Flow& f = flows_[id];
    if (f.rate_bps == kInfinite || f.remaining_bits <= 0) {
      f.finish_s = now_s;
    } else if (f.rate_bps > 0) {
      f.finish_s = now_s + f.remaining_bits / f.rate_bps;
    } else {
      f.finish_s = kInfinite;
    }
    next_finish_s_ = std::min(next_finish_s_, f.finish_s);
  }
}

void FlowNetwork::reset() {
  for (Resource& r : resources_) {
    r.active = 0;
    r.busy_s = 0;
    r.busy_since_s = 0;
    r.carried_bits = 0;
  }
  for (uint32_t id : active_) {
    flows_[id].active = false;
    free_ids_.push_back(id);
  }
  active_.clear();
  last_s_ = 0;
  next_finish_s_ = kInfinite;
  ++version_;
}

}  // namespace slowpipe::netmodel
