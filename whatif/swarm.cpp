// The swarm presets and their home links (swarm.h; docs/netmodel.md, "The
// swarm preset"). The distribution's numbers are assumptions anchored on
// public broadband statistics, stated in the preset and the docs.
#include "whatif/swarm.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "common/units.h"
#include "whatif/timing_preset.h"

namespace slowpipe::whatif {
namespace {

constexpr double kPi = 3.14159265358979323846;

// splitmix64 (Steele, Lea, Flood 2014): a portable 64-bit stream.
uint64_t next_u64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Uniform in (0, 1]: 53 random bits, never 0 (Box-Muller takes its log).
double uniform(uint64_t& state) {
  return static_cast<double>((next_u64(state) >> 11) + 1) * 0x1.0p-53;
}

}  // namespace

std::vector<double> draw_uplinks_bps(const HomeLinks& links, int hosts, uint64_t seed) {
  std::vector<double> out;
  out.reserve(static_cast<size_t>(std::max(hosts, 0)));
  uint64_t state = seed;
  for (int h = 0; h < hosts; ++h) {
    // One Box-Muller pair per host (the cosine half), so host h's draw does
    // not depend on how many hosts follow.
    const double u1 = uniform(state), u2 = uniform(state);
    const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * kPi * u2);
    const double bps = links.median_bps * std::exp(links.sigma * z);
    out.push_back(std::clamp(bps, links.min_bps, links.max_bps));
  }
  return out;
}

netmodel::NetConfig with_home_links(const netmodel::NetConfig& net, const HomeLinks& links,
                                    int stages, int replicas) {
  if (links.median_bps <= 0) return net;
  netmodel::NetConfig n = net;
  const int hosts = host_of(net, stages, replicas - 1, stages - 1) + 1;
  n.host_uplink_bps = draw_uplinks_bps(links, hosts, static_cast<uint64_t>(net.seed));
  n.downlink_per_uplink = links.download_per_upload;
  return n;
}

std::string describe_home_links(const HomeLinks& links, const netmodel::NetConfig& net) {
  std::ostringstream os;
  os << "home links per host: upload log-normal, median " << format_bandwidth(links.median_bps)
     << ", sigma " << links.sigma << " (of ln), clamped to " << format_bandwidth(links.min_bps)
     << ".." << format_bandwidth(links.max_bps) << ", download " << links.download_per_upload
     << " x upload, seed net.seed=" << net.seed;
  std::vector<double> up = net.host_uplink_bps;
  if (!up.empty()) {
    std::sort(up.begin(), up.end());
    os << "; drawn for " << up.size() << " hosts: min " << format_bandwidth(up.front())
       << ", median " << format_bandwidth(up[up.size() / 2]) << ", max "
       << format_bandwidth(up.back());
  }
  os << " (" << links.source << ")";
  return os.str();
}

void add_swarm_presets(Registry<TimingPreset>& presets) {
  TimingPreset p;
  p.name = "swarm-gpt2xl";
  p.description =
      "GPT-2 XL over a swarm of home PCs: 8 stages of 6 layers, seq 1024, micro-batch 1, batch "
      "32 per replica, GPipe, RTX4090, 256 replicas, each host behind its own home broadband "
      "link, 20 ms between homes, 10 epochs";
  p.shape = models::find_model_shape("timing.preset", "gpt2-xl");
  p.shape.name = "gpt2-xl";
  p.schedule = "gpipe";
  p.device = "RTX4090";
  p.epochs = 10;
  p.replicas = 256;  // the full replay (the links differ): about 2 s a replay
  p.codecs_used = "a what-if, no reference run: compare --fw/--bw/--grad";
  p.bandwidth_bps = 10e9;  // the internet core between homes: never the bottleneck
  p.latency_s = 20e-3;     // one way, home to home on one continent (assumption)
  HomeLinks& h = p.home_links;
  h.median_bps = 50e6;
  h.sigma = 1.0;
  h.min_bps = 10e6;
  h.max_bps = 1e9;
  h.download_per_upload = 2;
  h.source =
      "assumption anchored on Ookla's Speedtest Global Index, fixed broadband: global mean "
      "84.33 Mbit/s down, 44.10 up, August 2020";
  presets.add(p);
}

}  // namespace slowpipe::whatif
