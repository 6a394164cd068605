// The old FlowNetwork (see legacy_flow_network.h), unchanged but for its name.
// Max-min fair sharing by progressive filling: repeatedly find the resource
// whose remaining capacity divided among its not-yet-fixed flows is smallest,
// fix those flows at that share, subtract, and continue. A start or an end
// only changes the rates of the flows connected to it through shared
// resources, so only that component is recomputed; a flow alone on its path
// gets the path's smallest capacity directly. Progress of a flow is kept as
// (remaining bits, time of the last rate change), so untouched flows cost
// nothing per event.
#include "bench/netmodel/legacy_flow_network.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace slowpipe::bench {

uint32_t LegacyFlowNetwork::add_resource(const std::string& name, double capacity_bps) {
  if (!(capacity_bps > 0)) throw std::invalid_argument("resource '" + name + "': capacity <= 0");
  Resource r;
  r.name = name;
  r.capacity_bps = capacity_bps;
  resources_.push_back(r);
  return static_cast<uint32_t>(resources_.size() - 1);
}

uint32_t LegacyFlowNetwork::start_flow(double now_s, const uint32_t* path, size_t n, double bits) {
  if (n > (1u << 30)) throw std::length_error("flow path of " + std::to_string(n) + " resources");
  for (size_t i = 0; i < n; ++i) {
    if (path[i] >= resources_.size()) throw std::out_of_range("flow path: unknown resource");
  }
  uint32_t id;
  if (!free_ids_.empty()) {
    id = free_ids_.back();
    free_ids_.pop_back();
  } else {
    id = static_cast<uint32_t>(flows_.size());
    flows_.emplace_back();
  }
  Flow& f = flows_[id];
  if (f.path_cap < n) {
    const size_t cap = std::max<size_t>({n, kPathSlots, 2 * size_t{f.path_cap}});
    if (path_storage_.size() + cap > UINT32_MAX) throw std::length_error("flow paths: too many");
    f.path_begin = static_cast<uint32_t>(path_storage_.size());
    f.path_cap = static_cast<uint32_t>(cap);
    path_storage_.resize(path_storage_.size() + cap);
  }
  f.path_len = static_cast<uint32_t>(n);
  f.remaining_bits = std::max(0.0, bits);
  f.updated_s = now_s;
  f.rate_bps = 0;
  f.active = true;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t r = path[i];
    path_storage_[f.path_begin + i] = r;
    Resource& res = resources_[r];
    if (res.active++ == 0) res.busy_since_s = now_s;
    res.flows.push_back(id);
    res.carried_bits += f.remaining_bits;
  }
  active_.push_back(id);
  component_seeds_.clear();
  recompute(now_s, id);
  return id;
}

void LegacyFlowNetwork::collect_finished(double now_s, std::vector<uint32_t>& done) {
  const double tol = 1e-12 * std::max(1.0, now_s);
  const size_t first = done.size();
  component_seeds_.clear();
  size_t keep = 0;
  for (size_t i = 0; i < active_.size(); ++i) {
    const uint32_t id = active_[i];
    Flow& f = flows_[id];
    if (f.finish_s <= now_s + tol) {
      f.active = false;
      for (uint32_t k = 0; k < f.path_len; ++k) {
        const uint32_t r = path_storage_[f.path_begin + k];
        Resource& res = resources_[r];
        if (--res.active == 0) res.busy_s += now_s - res.busy_since_s;
        auto it = std::find(res.flows.begin(), res.flows.end(), id);
        *it = res.flows.back();
        res.flows.pop_back();
        component_seeds_.push_back(r);
      }
      done.push_back(id);
      free_ids_.push_back(id);
    } else {
      active_[keep++] = id;
    }
  }
  active_.resize(keep);
  std::sort(done.begin() + static_cast<std::ptrdiff_t>(first), done.end());
  if (done.size() > first) recompute(now_s, kNoFlow);
}

void LegacyFlowNetwork::recompute(double now_s, uint32_t seed_flow) {
  ++version_;
  // 1. The component: flows reachable from the seeds through shared resources.
  const uint64_t stamp = ++stamp_;
  component_.clear();
  resource_queue_.clear();
  auto visit_flow = [&](uint32_t id) {
    Flow& f = flows_[id];
    if (f.stamp == stamp) return;
    f.stamp = stamp;
    component_.push_back(id);
    for (uint32_t k = 0; k < f.path_len; ++k) {
      const uint32_t r = path_storage_[f.path_begin + k];
      if (resources_[r].stamp != stamp) {
        resources_[r].stamp = stamp;
        resource_queue_.push_back(r);
      }
    }
  };
  if (seed_flow != kNoFlow) visit_flow(seed_flow);
  for (uint32_t r : component_seeds_) {
    if (resources_[r].stamp != stamp) {
      resources_[r].stamp = stamp;
      resource_queue_.push_back(r);
    }
  }
  for (size_t q = 0; q < resource_queue_.size(); ++q) {
    for (uint32_t id : resources_[resource_queue_[q]].flows) visit_flow(id);
  }
  // 2. Bring the component's progress up to now at the old rates.
  for (uint32_t id : component_) {
    Flow& f = flows_[id];
    const double dt = now_s - f.updated_s;
    if (f.rate_bps == kInfinite) {
      f.remaining_bits = 0;
    } else if (dt > 0) {
      f.remaining_bits = std::max(0.0, f.remaining_bits - f.rate_bps * dt);
    }
    f.updated_s = now_s;
    f.fixed = false;
  }
  for (uint32_t r : resource_queue_) {
    resources_[r].left_bps = resources_[r].capacity_bps;
    resources_[r].unfixed = 0;
  }
  // 3. Progressive filling over the component.
  size_t unfixed_flows = 0;
  for (uint32_t id : component_) {
    Flow& f = flows_[id];
    if (f.path_len == 0) {  // crosses nothing: unconstrained
      f.rate_bps = kInfinite;
      f.fixed = true;
      continue;
    }
    ++unfixed_flows;
    for (uint32_t k = 0; k < f.path_len; ++k) ++resources_[path_storage_[f.path_begin + k]].unfixed;
  }
  // Fast path: a flow that shares none of its resources gets its path's
  // smallest capacity (the common case of a pipeline: one flow per link).
  for (uint32_t id : component_) {
    Flow& f = flows_[id];
    if (f.fixed) continue;
    bool alone = true;
    double cap = kInfinite;
    for (uint32_t k = 0; k < f.path_len && alone; ++k) {
      const Resource& res = resources_[path_storage_[f.path_begin + k]];
      alone = res.unfixed == 1;
      cap = std::min(cap, res.left_bps);
    }
    if (!alone) continue;
    f.rate_bps = cap;
    f.fixed = true;
    --unfixed_flows;
    for (uint32_t k = 0; k < f.path_len; ++k) {
      Resource& res = resources_[path_storage_[f.path_begin + k]];
      res.left_bps -= cap;
      res.unfixed = 0;
    }
  }
  while (unfixed_flows > 0) {
    // The bottleneck: smallest fair share among resources with unfixed flows.
    double share = kInfinite;
    for (uint32_t id : component_) {
      const Flow& f = flows_[id];
      if (f.fixed) continue;
      for (uint32_t k = 0; k < f.path_len; ++k) {
        const Resource& res = resources_[path_storage_[f.path_begin + k]];
        share = std::min(share, std::max(0.0, res.left_bps) / res.unfixed);
      }
    }
    // Fix every unfixed flow that crosses a resource at that share.
    for (uint32_t id : component_) {
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
  for (uint32_t id : component_) {
    Flow& f = flows_[id];
    if (f.rate_bps == kInfinite || f.remaining_bits <= 0) {
      f.finish_s = now_s;
    } else if (f.rate_bps > 0) {
      f.finish_s = now_s + f.remaining_bits / f.rate_bps;
    } else {
      f.finish_s = kInfinite;
    }
  }
  // 4. The next finish over all active flows.
  next_finish_s_ = kInfinite;
  for (uint32_t id : active_) next_finish_s_ = std::min(next_finish_s_, flows_[id].finish_s);
}

void LegacyFlowNetwork::reset() {
  for (Resource& r : resources_) {
    r.active = 0;
    r.flows.clear();
    r.busy_s = 0;
    r.busy_since_s = 0;
    r.carried_bits = 0;
  }
  for (uint32_t id : active_) {
    flows_[id].active = false;
    free_ids_.push_back(id);
  }
  active_.clear();
  next_finish_s_ = kInfinite;
  ++version_;
}

}  // namespace slowpipe::bench
