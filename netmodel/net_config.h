// Network configuration of a simulated cluster: the `net.*` keys, the named
// presets they start from, and the topology they describe.
//
// Topology: every (replica, stage) device lives on a host; by default each
// device has its own host (`net.stages_per_host=1`); with K > 1, K consecutive
// stages of one replica share a host and talk through memory (free, instant).
// Any two distinct hosts are joined by their own full-duplex link (each
// direction is a separate resource) with the preset's bandwidth and latency,
// unless `net.links` overrides that pair. Optionally each host has a NIC
// (`net.nic_bandwidth`, egress and ingress resources) shared by all its flows,
// or its own access link (host_uplink_bps: a swarm preset's home links).
// Assumptions: protocol efficiency multiplies the bandwidth (TCP payload per
// Ethernet frame: 1448/1514 = 0.9564; docs/netmodel.md); per-message overhead is fixed bytes or
// seconds; jitter adds a seeded exponential delay to each message's latency.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/options.h"
#include "common/registry.h"
#include "netmodel/compute_model.h"

namespace slowpipe::netmodel {

struct NetPreset {
  std::string name;
  double bandwidth_bps;  // may be infinite ("none")
  double latency_s;
  std::string description;  // one line, with the source of reference figures
};

// The preset registry, in display order.
const Registry<NetPreset>& net_presets();
// Throws UsageError naming `net.preset` and listing the presets.
const NetPreset& find_net_preset(const std::string& name);

// One `net.links` entry: host_a <-> host_b with its own parameters.
struct LinkOverride {
  int host_a = 0;
  int host_b = 0;
  double bandwidth_bps = 0;
  double latency_s = 0;
};
// Parses "A-B:BANDWIDTH[:LATENCY],..." (BANDWIDTH may also be a preset name,
// which then supplies the latency unless given). Throws UsageError naming `key`.
// Called where `net.links` is read (describe_options, set_links) and nowhere else.
std::vector<LinkOverride> parse_link_overrides(const std::string& key, const std::string& text);

struct NetConfig {
  std::string preset = "10Gbps";
  double bandwidth_bps = 0;  // 0: the preset's
  double latency_s = -1;     // < 0: the preset's
  double jitter_s = 0;       // mean of the exponential extra latency per message
  double efficiency = 0.9564;
  double overhead_bytes = 0;  // added to every message
  double overhead_s = 0;      // added to every message's latency
  ComputeSpec compute;        // net.compute, parsed (default kDefaultComputeModel)
  int64_t seed = 1;
  int stages_per_host = 1;
  double nic_bandwidth_bps = 0;  // 0: unlimited NICs
  // Per-host access links (home broadband; no key: `timing.preset=swarm-*`
  // draws them, swarm.h): host h's NIC egress is host_uplink_bps[h], its
  // ingress downlink_per_uplink times that. Non-empty: replaces
  // nic_bandwidth_bps for every host (one entry per host).
  std::vector<double> host_uplink_bps;
  double downlink_per_uplink = 1;
  // net.links, parsed once (set_links): the per-link overrides in the
  // order given, and the text as given, which only the run log and
  // describe() print.
  std::vector<LinkOverride> links;
  std::string links_text;
  // How messages use the network (docs/netmodel.md, "Two network views"):
  // "" = the preset's (slowpipe timing), else kFullDuplex; kSharedInbound:
  // the Protocol NanoGPT meter (replay_inbound.h).
  std::string link_model;
};

constexpr const char* kFullDuplex = "full-duplex";
constexpr const char* kSharedInbound = "shared-inbound";
// The link model in force: kFullDuplex when `link_model` is empty.
bool shared_inbound(const NetConfig& config);

// Binds the `net.*` keys.
void describe_options(NetConfig& config, slowpipe::OptionSet& options);
// Sets net.links from its text (what the option does): config.links parsed,
// config.links_text as given. Throws UsageError naming net.links.
void set_links(NetConfig& config, const std::string& text);

// Effective values after applying the preset and explicit overrides.
double effective_bandwidth_bps(const NetConfig& config);  // before efficiency
double effective_latency_s(const NetConfig& config);

// Host of device (replica, stage) for `stages` stages per replica.
int host_of(const NetConfig& config, int stages, int replica, int stage);

// A one-line summary, e.g. "preset 10Gbps: 10Gbps, 50us, efficiency 0.9564".
std::string describe(const NetConfig& config);

}  // namespace slowpipe::netmodel
