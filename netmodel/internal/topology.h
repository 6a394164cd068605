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
// Pooled (the sharded exchange over uniform links): besides, the D-1 links
// from a host of replica 0 to the hosts at its position in the other replicas
// carry alike flows (one shard to each, at the same times), so they become
// one resource of D-1 times the capacity, each shard a member of one path
// class: the same max-min shares (each shard's fair share of its own link is
// that of the pool), and the exchange costs O(log D) per shard, not O(D).
// Leaves out: multi-hop routing inside the cluster, switches, oversubscription.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "netmodel/internal/flow_network.h"
#include "netmodel/net_config.h"

namespace slowpipe::netmodel {

// How the topology stands for the cluster.
enum class Folding : uint8_t {
  kNone,      // every resource
  kReplicas,  // one per orbit of the replica turn
  kPooled,    // kReplicas, and the links to the other replicas pooled per position
};

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
           Folding folding = Folding::kNone);
  const Route& route(int host_from, int host_to);
  int host(int replica, int stage) const { return host_of(config_, stages_, replica, stage); }
  int hosts() const { return hosts_; }
  bool folded() const { return fold_; }
  // The links resource r stands for at one replica: D-1 pooled, else 1.
  int copies(uint32_t r) const;
  // The name of resource r's copy `shift` replicas on ("link3->4", "nic2.out");
  // of a pool, its `copy`-th link (to the replica copy + 1 further on).
  std::string resource_name(uint32_t r, int shift, int copy = 0) const;

 private:
  enum class Where : uint8_t { kNicOut, kNicIn, kLink, kPool };
  struct Place {
    Where where;
    int a, b;  // the NIC's host; the link's hosts (from, to); the pool's host and position
  };
  uint32_t add_resource(Where where, int a, int b, double capacity_bps);
  void add_nics();
  void add_link(int a, int b);
  void add_direction(int from, int to);  // folded: one direction, its orbit's member from replica 0
  std::pair<double, double> link_parameters(int a, int b) const;  // (bandwidth, latency)
  std::pair<int, int> folded_pair(int from, int to) const;
  std::pair<int, int> route_key(int from, int to) const;  // routes_'s key
  int turned(int host, int shift) const;

  NetConfig config_;
  int stages_;
  int hosts_;
  int hosts_per_replica_;
  int replicas_;
  bool fold_, pool_;
  FlowNetwork& network_;
  std::vector<LinkOverride> overrides_;
  std::vector<uint32_t> nic_out_, nic_in_;  // empty when NICs are unlimited
  std::vector<Place> places_;               // per FlowNetwork resource
  std::map<std::pair<int, int>, Route> routes_;
};

}  // namespace slowpipe::netmodel
