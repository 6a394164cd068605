// Links and routes of the simulated cluster, whole or folded by replica.
#include "netmodel/internal/topology.h"

#include <string>

#include "common/errors.h"

namespace slowpipe::netmodel {

Topology::Topology(const NetConfig& config, int stages, int replicas, FlowNetwork& network,
                   Folding folding)
    : config_(config),
      stages_(stages),
      replicas_(replicas),
      fold_(folding != Folding::kNone && replicas > 1),
      pool_(folding == Folding::kPooled && replicas > 1),
      network_(network) {
  hosts_ = host_of(config, stages, replicas - 1, stages - 1) + 1;
  hosts_per_replica_ = hosts_ / replicas;
  overrides_ = config.links;
  for (const auto& o : overrides_) {
    if (o.host_a >= hosts_ || o.host_b >= hosts_) {
      throw UsageError("bad value for 'net.links': host " +
                       std::to_string(std::max(o.host_a, o.host_b)) + " does not exist (hosts 0.." +
                       std::to_string(hosts_ - 1) + ")");
    }
  }
  add_nics();
  // Folded, replica 0's links stand for every replica's.
  const int chained = fold_ ? 1 : replicas;
  for (int r = 0; r < chained; ++r) {
    for (int s = 0; s + 1 < stages; ++s) add_link(host(r, s), host(r, s + 1));
  }
  if (replicas > 1) {
    for (int s = 0; s < stages; ++s) {
      for (int r = 0; r < chained; ++r) add_link(host(r, s), host((r + 1) % replicas, s));
    }
  }
}

void Topology::add_nics() {
  const std::vector<double>& uplinks = config_.host_uplink_bps;
  if (config_.nic_bandwidth_bps <= 0 && uplinks.empty()) return;
  if (!uplinks.empty() && uplinks.size() < static_cast<size_t>(hosts_)) {
    throw UsageError("per-host access links: " + std::to_string(uplinks.size()) + " for " +
                     std::to_string(hosts_) + " hosts");
  }
  const int nics = fold_ ? hosts_per_replica_ : hosts_;
  for (int h = 0; h < nics; ++h) {
    const double out_bps =
        uplinks.empty() ? config_.nic_bandwidth_bps : uplinks[static_cast<size_t>(h)];
    const double in_bps = uplinks.empty() ? out_bps : out_bps * config_.downlink_per_uplink;
    nic_out_.push_back(add_resource(Where::kNicOut, h, h, out_bps * config_.efficiency));
    nic_in_.push_back(add_resource(Where::kNicIn, h, h, in_bps * config_.efficiency));
  }
}

uint32_t Topology::add_resource(Where where, int a, int b, double capacity_bps) {
  places_.push_back({where, a, b});
  return network_.add_resource(resource_name(static_cast<uint32_t>(places_.size() - 1), 0),
                               capacity_bps);
}

// The pair's bandwidth and latency: the preset's, unless net.links overrides
// it (the last override of the pair wins, a latency only where it gives one).
std::pair<double, double> Topology::link_parameters(int a, int b) const {
  double bandwidth_bps = effective_bandwidth_bps(config_);
  double latency_s = effective_latency_s(config_);
  for (const auto& o : overrides_) {
    if ((o.host_a == a && o.host_b == b) || (o.host_a == b && o.host_b == a)) {
      bandwidth_bps = o.bandwidth_bps;
      if (o.latency_s >= 0) latency_s = o.latency_s;
    }
  }
  return {bandwidth_bps, latency_s};
}

void Topology::add_link(int a, int b) {
  if (fold_) {
    add_direction(a, b);
    add_direction(b, a);
    return;
  }
  if (a == b) {
    Route local;
    local.local = true;
    routes_[{a, b}] = local;
    return;
  }
  if (routes_.count({a, b})) return;
  const auto [bandwidth_bps, latency_s] = link_parameters(a, b);
  const double cap = bandwidth_bps * config_.efficiency;
  for (int dir = 0; dir < 2; ++dir) {
    const int from = dir == 0 ? a : b, to = dir == 0 ? b : a;
    Route route;
    route.latency_s = latency_s;
    if (!nic_out_.empty()) route.path[route.length++] = nic_out_[from];
    route.path[route.length++] = add_resource(Where::kLink, from, to, cap);
    if (!nic_in_.empty()) route.path[route.length++] = nic_in_[to];
    routes_[{from, to}] = route;
  }
}

int Topology::turned(int host, int shift) const {
  const long long h = host + static_cast<long long>(shift) * hosts_per_replica_;
  return static_cast<int>(((h % hosts_) + hosts_) % hosts_);
}

// The member of (from -> to)'s orbit that leaves a host of replica 0.
std::pair<int, int> Topology::folded_pair(int from, int to) const {
  const int shift = from / hosts_per_replica_;
  return {turned(from, -shift), turned(to, -shift)};
}

// Folded: the pair's member from replica 0; pooled, and to another replica:
// (from, -1 - the destination's position in its replica).
std::pair<int, int> Topology::route_key(int from, int to) const {
  if (!fold_) return {from, to};
  const auto key = folded_pair(from, to);
  if (!pool_ || key.second < hosts_per_replica_) return key;
  return {key.first, -1 - key.second % hosts_per_replica_};
}

void Topology::add_direction(int from, int to) {
  const auto key = route_key(from, to);
  if (routes_.count(key)) return;
  const auto [a, b] = folded_pair(from, to);
  Route route;
  if (a == b) {
    route.local = true;
    routes_[key] = route;
    return;
  }
  const auto [bandwidth_bps, latency_s] = link_parameters(a, b);
  route.latency_s = latency_s;
  if (!nic_out_.empty()) route.path[route.length++] = nic_out_[a];
  const int position = b % hosts_per_replica_;
  route.path[route.length++] =
      key.second < 0 ? add_resource(Where::kPool, a, position,
                                    (replicas_ - 1) * bandwidth_bps * config_.efficiency)
                     : add_resource(Where::kLink, a, b, bandwidth_bps * config_.efficiency);
  if (!nic_in_.empty()) route.path[route.length++] = nic_in_[position];
  routes_[key] = route;
}

const Route& Topology::route(int host_from, int host_to) {
  const auto key = route_key(host_from, host_to);
  auto it = routes_.find(key);
  if (it == routes_.end()) {
    if (fold_) {
      add_direction(host_from, host_to);
    } else {
      add_link(host_from, host_to);
    }
    it = routes_.find(key);
  }
  return it->second;
}

int Topology::copies(uint32_t r) const {
  return places_[r].where == Where::kPool ? replicas_ - 1 : 1;
}

std::string Topology::resource_name(uint32_t r, int shift, int copy) const {
  const Place& p = places_[r];
  const int a = turned(p.a, shift);
  switch (p.where) {
    case Where::kNicOut:
      return "nic" + std::to_string(a) + ".out";
    case Where::kNicIn:
      return "nic" + std::to_string(a) + ".in";
    case Where::kLink:
      break;
    case Where::kPool:
      return "link" + std::to_string(a) + "->" +
             std::to_string(turned(p.b + (copy + 1) * hosts_per_replica_, shift));
  }
  return "link" + std::to_string(a) + "->" + std::to_string(turned(p.b, shift));
}

}  // namespace slowpipe::netmodel
