// Random netsim scenarios for the flow-network benchmarks: a connected random
// topology of hosts and full-duplex links (a random spanning tree plus extra
// links between random unlinked pairs), a random simple route for every pair
// of hosts that no link joins, and flows between random pairs with
// log-uniform sizes and uniform start times. Everything follows from `seed`
// (splitmix64), so a case is the same on every machine and every run.
//
// The result is both a netsim `Scenario` (what `slowpipe netsim` reads, for
// `netmodel::simulate`) and the same flows already resolved to FlowNetwork
// resources (`FlowSet`), in the resource order `simulate` builds: link l
// direction host_a->host_b is resource 2l, the reverse 2l + 1.
// Leaves out: half-duplex links, links that are down, infinite capacities.
#pragma once

#include <cstdint>
#include <ostream>
#include <vector>

#include "netmodel/netsim.h"

namespace slowpipe::bench {

struct ScenarioGenConfig {
  uint64_t seed = 1;
  int hosts = 16;
  int links = 18;  // >= hosts - 1 (a spanning tree), <= hosts (hosts - 1) / 2
  int flows = 10000;
  double window_s = 60;    // starts uniform in [0, window_s)
  double min_bytes = 1e4;  // sizes log-uniform in [min_bytes, max_bytes]
  double max_bytes = 1e7;
  double min_bandwidth_bps = 1e8;  // link bandwidths log-uniform in this range
  double max_bandwidth_bps = 1e10;
  double max_latency_s = 0.02;  // link latencies uniform in [0, max_latency_s)
};

struct FlowSet {
  std::vector<double> capacity_bps;          // (2 * links) resources
  std::vector<std::vector<uint32_t>> paths;  // (flows) resource indices, in route order
  std::vector<double> bits;                  // (flows)
  std::vector<double> start_s;               // (flows)
  std::vector<double> latency_s;             // (flows) sum over the route's links
};

struct GeneratedScenario {
  netmodel::Scenario scenario;
  FlowSet flows;
};

GeneratedScenario generate_scenario(const ScenarioGenConfig& config);

// The scaling cases of bench_netmodel and bench/host-check.sh: 16 hosts, 18
// links, seed 20261123; the start window grows with the flow count (the same
// arrival rate, 55 s per 10,000 flows, so that about 1,500 flows are in
// flight at the peak with 10,000), but some links are overloaded, so their
// backlog keeps growing: 1,513 flows in flight at the peak with 10k flows,
// 13,533 with 100k.
ScenarioGenConfig scale_case(int flows);

// Writes `scenario` as a `slowpipe netsim` JSON file (numbers in bit/s,
// seconds and bytes, printed to round trip).
void write_scenario_json(const netmodel::Scenario& scenario, std::ostream& os);

// The most flows in flight at once: a flow counts from its start to its
// delivery (finish_s, latency included). `finish_s` parallel to `start_s`.
size_t peak_concurrency(const std::vector<double>& start_s, const std::vector<double>& finish_s);

}  // namespace slowpipe::bench
