// Links and routes of the simulated cluster.
#include "netmodel/topology.h"

#include <string>

#include "common/errors.h"

namespace slowpipe::netmodel {

Topology::Topology(const NetConfig& config, int stages, int replicas, FlowNetwork& network)
    : config_(config), stages_(stages), network_(network) {
  hosts_ = host_of(config, stages, replicas - 1, stages - 1) + 1;
  overrides_ = parse_link_overrides("net.links", config.links);
  for (const auto& o : overrides_) {
    if (o.host_a >= hosts_ || o.host_b >= hosts_) {
      throw UsageError("bad value for 'net.links': host " +
                       std::to_string(std::max(o.host_a, o.host_b)) + " does not exist (hosts 0.." +
                       std::to_string(hosts_ - 1) + ")");
    }
  }
  if (config.nic_bandwidth_bps > 0) {
    for (int h = 0; h < hosts_; ++h) {
      const double cap = config.nic_bandwidth_bps * config.efficiency;
      nic_out_.push_back(network_.add_resource("nic" + std::to_string(h) + ".out", cap));
      nic_in_.push_back(network_.add_resource("nic" + std::to_string(h) + ".in", cap));
    }
  }
  for (int r = 0; r < replicas; ++r) {
    for (int s = 0; s + 1 < stages; ++s) add_link(host(r, s), host(r, s + 1));
  }
  if (replicas > 1) {
    for (int s = 0; s < stages; ++s) {
      for (int r = 0; r < replicas; ++r) add_link(host(r, s), host((r + 1) % replicas, s));
    }
  }
}

void Topology::add_link(int a, int b) {
  if (a == b) {
    Route local;
    local.local = true;
    routes_[{a, b}] = local;
    return;
  }
  if (routes_.count({a, b})) return;
  double bandwidth_bps = effective_bandwidth_bps(config_);
  double latency_s = effective_latency_s(config_);
  for (const auto& o : overrides_) {
    if ((o.host_a == a && o.host_b == b) || (o.host_a == b && o.host_b == a)) {
      bandwidth_bps = o.bandwidth_bps;
      if (o.latency_s >= 0) latency_s = o.latency_s;
    }
  }
  const double cap = bandwidth_bps * config_.efficiency;
  for (int dir = 0; dir < 2; ++dir) {
    const int from = dir == 0 ? a : b, to = dir == 0 ? b : a;
    Route route;
    route.latency_s = latency_s;
    if (!nic_out_.empty()) route.path[route.length++] = nic_out_[from];
    route.path[route.length++] =
        network_.add_resource("link" + std::to_string(from) + "->" + std::to_string(to), cap);
    if (!nic_in_.empty()) route.path[route.length++] = nic_in_[to];
    routes_[{from, to}] = route;
  }
}

const Route& Topology::route(int host_from, int host_to) {
  auto it = routes_.find({host_from, host_to});
  if (it == routes_.end()) {
    add_link(host_from, host_to);
    it = routes_.find({host_from, host_to});
  }
  return it->second;
}

}  // namespace slowpipe::netmodel
