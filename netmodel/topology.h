// The simulated cluster's wiring: hosts, full-duplex links between them, the
// optional host NICs, and the route (resources + latency) of a message.
//
// Built from a NetConfig for S stages and D replicas: device (r, s) lives on
// host_of(config, S, r, s); the chain links (r, s) <-> (r, s+1) and the ring
// links (r, s) <-> (r+1 mod D, s) are created up front, any other pair on first
// use. Each link direction is its own FlowNetwork resource with capacity
// bandwidth x efficiency; a route crosses [src NIC egress], link direction,
// [dst NIC ingress]. Two devices on one host talk for free (local route).
// Leaves out: multi-hop routing inside the cluster, switches, oversubscription.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "netmodel/flow_network.h"
#include "netmodel/net_config.h"

namespace slowpipe::netmodel {

struct Route {
  uint32_t path[3] = {0, 0, 0};  // FlowNetwork resources
  uint32_t length = 0;
  double latency_s = 0;
  bool local = false;  // same host: no network at all
};

class Topology {
 public:
  // Adds its resources to `network` (which must outlive the topology).
  Topology(const NetConfig& config, int stages, int replicas, FlowNetwork& network);
  const Route& route(int host_from, int host_to);
  int host(int replica, int stage) const { return host_of(config_, stages_, replica, stage); }
  int hosts() const { return hosts_; }

 private:
  void add_link(int a, int b);
  NetConfig config_;
  int stages_;
  int hosts_;
  FlowNetwork& network_;
  std::vector<LinkOverride> overrides_;
  std::vector<uint32_t> nic_out_, nic_in_;  // empty when NICs are unlimited
  std::map<std::pair<int, int>, Route> routes_;
};

}  // namespace slowpipe::netmodel
