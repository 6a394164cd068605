// The `net.*` options and the preset registry.
//
// Datacenter and bandwidth-limited presets follow the AQ-SGD paper's set-up
// (a datacenter network shaped down to 10Gbps ... 100Mbps with tc: datacenter
// latency, limited bandwidth). The geo-distributed presets are reference
// figures: us-west<->us-east (67 ms, 0.79 Gbit/s), a measured inter-region
// link cited in the AQ-SGD paper's evaluation (docs/netmodel.md, presets);
// the other two are illustrative orders of magnitude for trans-Atlantic and
// trans-Pacific cloud links, not measurements; override them with your own.
#include "netmodel/net_config.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "common/errors.h"
#include "common/units.h"

namespace slowpipe::netmodel {

const Registry<NetPreset>& net_presets() {
  static const Registry<NetPreset> presets(
      "preset",
      {
          {"none", INFINITY, 0, "ideal network: unlimited bandwidth, zero latency (compute only)"},
          {"100Gbps", 100e9, 5e-6, "datacenter, 100 Gbit/s, 5 us"},
          {"10Gbps", 10e9, 50e-6, "datacenter, 10 Gbit/s, 50 us (AQ-SGD's fastest setting)"},
          {"1Gbps", 1e9, 50e-6, "datacenter link shaped to 1 Gbit/s, 50 us"},
          {"500Mbps", 500e6, 50e-6, "datacenter link shaped to 500 Mbit/s, 50 us"},
          {"300Mbps", 300e6, 50e-6, "datacenter link shaped to 300 Mbit/s, 50 us"},
          {"100Mbps", 100e6, 50e-6, "datacenter link shaped to 100 Mbit/s, 50 us"},
          {"geo-us-west-east", 0.79e9, 67e-3,
           "reference figure: US west <-> US east, 67 ms, 0.79 Gbit/s (measured inter-region)"},
          {"geo-us-europe", 0.5e9, 80e-3,
           "illustrative: US east <-> western Europe, ~80 ms, ~0.5 Gbit/s (order of magnitude)"},
          {"geo-us-asia", 0.3e9, 120e-3,
           "illustrative: US west <-> East Asia, ~120 ms, ~0.3 Gbit/s (order of magnitude)"},
      });
  return presets;
}

const NetPreset& find_net_preset(const std::string& name) {
  return net_presets().at("net.preset", name);
}

namespace {

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : text) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else if (c != ' ') {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

}  // namespace

std::vector<LinkOverride> parse_link_overrides(const std::string& key, const std::string& text) {
  std::vector<LinkOverride> out;
  if (text.empty()) return out;
  for (const std::string& item : split(text, ',')) {
    const auto parts = split(item, ':');
    const auto hosts = split(parts[0], '-');
    if (parts.size() < 2 || parts.size() > 3 || hosts.size() != 2) {
      throw UsageError("bad value for '" + key + "': '" + item +
                       "' is not HOST-HOST:BANDWIDTH[:LATENCY] (e.g. 3-4:100Mbps:20ms)");
    }
    LinkOverride o;
    o.host_a = static_cast<int>(parse_int(key, hosts[0]));
    o.host_b = static_cast<int>(parse_int(key, hosts[1]));
    if (o.host_a < 0 || o.host_b < 0 || o.host_a == o.host_b) {
      throw UsageError("bad value for '" + key + "': '" + item + "' needs two distinct hosts >= 0");
    }
    if (const NetPreset* p = net_presets().find(parts[1])) {
      o.bandwidth_bps = p->bandwidth_bps;
      o.latency_s = p->latency_s;
    } else {
      o.bandwidth_bps = parse_bandwidth_bps(key, parts[1]);
      o.latency_s = -1;  // the default link's
    }
    if (parts.size() == 3) o.latency_s = parse_duration_s(key, parts[2]);
    out.push_back(o);
  }
  return out;
}

namespace {

// The keys of a link: preset, bandwidth, latency, jitter, efficiency, overhead.
void describe_link_options(NetConfig& c, slowpipe::OptionSet& o) {
  o.add_custom(
      "net.preset", "choice",
      "named network (" + net_presets().known() + "); net.bandwidth/latency override it",
      [&c](const std::string& v) {
        find_net_preset(v);
        c.preset = v;
      },
      [&c] { return c.preset; });
  o.add_custom(
      "net.bandwidth", "bandwidth", "link bandwidth (100Mbps, 1Gbps, ...); 'preset': the preset's",
      [&c](const std::string& v) {
        c.bandwidth_bps = v == "preset" ? 0 : parse_bandwidth_bps("net.bandwidth", v);
      },
      [&c] { return c.bandwidth_bps > 0 ? format_bandwidth(c.bandwidth_bps) : "preset"; });
  o.add_custom(
      "net.latency", "duration", "one-way link latency (10ms, 50us, ...); 'preset': the preset's",
      [&c](const std::string& v) {
        c.latency_s = v == "preset" ? -1 : parse_duration_s("net.latency", v);
      },
      [&c] { return c.latency_s >= 0 ? format_duration(c.latency_s) : "preset"; });
  o.add_custom(
      "net.jitter", "duration", "mean extra latency per message (exponential, seeded by net.seed)",
      [&c](const std::string& v) { c.jitter_s = parse_duration_s("net.jitter", v); },
      [&c] { return format_duration(c.jitter_s); });
  o.add("net.efficiency", c.efficiency,
        "payload fraction of the link rate (TCP, 1500-byte MTU: 1448/1514 = 0.9564)", 1e-6, 1.0);
  o.add_custom(
      "net.overhead", "bytes|duration",
      "per-message overhead: bytes added to each message (64B) or seconds added to its latency "
      "(20us)",
      [&c](const std::string& v) {
        if (!v.empty() && (v.back() == 's' || v.back() == 'S')) {
          c.overhead_s = parse_duration_s("net.overhead", v);
          c.overhead_bytes = 0;
        } else {
          c.overhead_bytes = parse_bytes("net.overhead", v);
          c.overhead_s = 0;
        }
      },
      [&c] {
        return c.overhead_s > 0 ? format_duration(c.overhead_s) : format_bytes(c.overhead_bytes);
      });
}

// The keys of the cluster: compute model, seed, hosts, NICs, per-link overrides.
void describe_cluster_options(NetConfig& c, slowpipe::OptionSet& o) {
  o.add_custom(
      "net.compute", "string",
      "compute-time model: analytic:DEVICE (roofline plus launch floor on a named device; "
      "deterministic, the same on any host) | shaped:DEVICE[:mode=eager|compiled|fused]"
      "[:dtype=fp32|tf32|bf16|fp16|fp8][:attn=flash|materialised][:autocast=on|off][:speed=F] "
      "(per-GEMM, attention and "
      "memory-pass costs from the model's shapes; deterministic; docs/compute-clock.md) | "
      "calibrated[:W[:min|median]] (per-op seconds of "
      "this host over the first W steps, then fixed) | measured (this host, every step) | "
      "scaled:F | fixed:SECONDS[/BACKWARD_S]",
      [&c](const std::string& v) { c.compute = parse_compute_spec(v, "net.compute"); },
      [&c] { return c.compute.text; });
  o.add("net.seed", c.seed, "seed of the jitter random stream", 0);
  o.add("net.stages_per_host", c.stages_per_host,
        "consecutive stages of a replica sharing one host (their messages are free)", 1, 1 << 20);
  o.add_custom(
      "net.nic_bandwidth", "bandwidth",
      "per-host NIC capacity each way, shared by its flows; 0: unlimited",
      [&c](const std::string& v) {
        c.nic_bandwidth_bps = v == "0" ? 0 : parse_bandwidth_bps("net.nic_bandwidth", v);
      },
      [&c] { return c.nic_bandwidth_bps > 0 ? format_bandwidth(c.nic_bandwidth_bps) : "0"; });
  o.add_custom(
      "net.links", "list",
      "per-link overrides HOST-HOST:BANDWIDTH|PRESET[:LATENCY],... (hosts: "
      "replica*hosts_per_replica"
      " + stage/stages_per_host)",
      [&c](const std::string& v) { set_links(c, v); }, [&c] { return c.links_text; });
  o.add_custom(
      "net.link_model", "choice",
      "full-duplex (default: a resource per link direction, fair sharing, latency pipelined) | "
      "shared-inbound (the Protocol NanoGPT meter: one inbound wire per host for both "
      "directions, bits/bandwidth + latency per message, serialized; docs/netmodel.md)",
      [&c](const std::string& v) {
        if (v != kFullDuplex && v != kSharedInbound) {
          throw UsageError("bad value for 'net.link_model': '" + v + "' (" + kFullDuplex + " or " +
                           kSharedInbound + ")");
        }
        c.link_model = v;
      },
      [&c] { return c.link_model.empty() ? std::string(kFullDuplex) : c.link_model; });
}

}  // namespace

void set_links(NetConfig& c, const std::string& text) {
  c.links = parse_link_overrides("net.links", text);
  c.links_text = text;
}

bool shared_inbound(const NetConfig& c) {
  return c.link_model == kSharedInbound;
}

void describe_options(NetConfig& c, slowpipe::OptionSet& o) {
  describe_link_options(c, o);
  describe_cluster_options(c, o);
}

double effective_bandwidth_bps(const NetConfig& c) {
  return c.bandwidth_bps > 0 ? c.bandwidth_bps : find_net_preset(c.preset).bandwidth_bps;
}

double effective_latency_s(const NetConfig& c) {
  return c.latency_s >= 0 ? c.latency_s : find_net_preset(c.preset).latency_s;
}

int host_of(const NetConfig& c, int stages, int replica, int stage) {
  const int per = std::max(1, c.stages_per_host);
  const int hosts_per_replica = (stages + per - 1) / per;
  return replica * hosts_per_replica + stage / per;
}

std::string describe(const NetConfig& c) {
  std::ostringstream os;
  const double bw = effective_bandwidth_bps(c);
  os << "preset " << c.preset << ": " << (std::isinf(bw) ? "unlimited" : format_bandwidth(bw))
     << ", " << format_duration(effective_latency_s(c)) << ", efficiency " << c.efficiency;
  if (c.jitter_s > 0) os << ", jitter " << format_duration(c.jitter_s);
  if (!c.links_text.empty()) os << ", links " << c.links_text;
  if (shared_inbound(c)) os << ", link model " << kSharedInbound << " (efficiency not applied)";
  return os.str();
}

}  // namespace slowpipe::netmodel
