// The simulated cluster's wiring: hosts, full-duplex links between them, the
// optional host NICs, and the route (resources + latency) of a message.
//
// Built from a NetConfig for S stages and D replicas: device (r, s) lives on
// host_of(config, S, r, s); the chain links (r, s) <-> (r, s+1) and the ring
// links (r, s) <-> (r+1 mod D, s) are created up front, any other pair on first
// use. Each link direction is its own FlowNetwork resource with capacity
// bandwidth x efficiency; a route crosses [src NIC egress], link direction,
// [dst NIC ingress]. Two devices on one host talk for free (local route).
//
// Folded (`fold_replicas`, for the replica-symmetric replay, replay.h): when
// turning the cluster by one replica (host h -> h + hosts per replica, mod
// the hosts) maps every link to one of equal bandwidth and latency, the
// resources of one turn-orbit behave alike; only one per orbit exists, the
// one leaving a host of replica 0: a route from host a to host b is the route
// from a's replica-0 counterpart to b turned by as much. Each resource keeps
// where it lies, so `resource_name(r, k)` names its copy k replicas on.
// Leaves out: multi-hop routing inside the cluster, switches, oversubscription.
#pragma once

#include <cstdint>
#include <map>
#include <string>
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
  Topology(const NetConfig& config, int stages, int replicas, FlowNetwork& network,
           bool fold_replicas = false);
  const Route& route(int host_from, int host_to);
  int host(int replica, int stage) const { return host_of(config_, stages_, replica, stage); }
  int hosts() const { return hosts_; }
  bool folded() const { return fold_; }
  // The name of resource r's copy `shift` replicas on ("link3->4", "nic2.out").
  std::string resource_name(uint32_t r, int shift) const;

 private:
  enum class Where : uint8_t { kNicOut, kNicIn, kLink };
  struct Place {
    Where where;
    int a, b;  // the NIC's host; the link's hosts (from, to)
  };
  uint32_t add_resource(Where where, int a, int b, double capacity_bps);
  void add_nics();
  void add_link(int a, int b);
  void add_direction(int from, int to);  // folded: one direction, its orbit's member from replica 0
  std::pair<double, double> link_parameters(int a, int b) const;  // (bandwidth, latency)
  std::pair<int, int> folded_pair(int from, int to) const;
  int turned(int host, int shift) const;

  NetConfig config_;
  int stages_;
  int hosts_;
  int hosts_per_replica_;
  bool fold_;
  FlowNetwork& network_;
  std::vector<LinkOverride> overrides_;
  std::vector<uint32_t> nic_out_, nic_in_;  // empty when NICs are unlimited
  std::vector<Place> places_;               // per FlowNetwork resource
  std::map<std::pair<int, int>, Route> routes_;
};

}  // namespace slowpipe::netmodel
