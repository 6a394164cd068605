// Swarm set-ups of `slowpipe timing` (docs/netmodel.md, "The swarm preset"):
// pipelines of consumer GPUs at home, each host behind its own broadband
// access link. The access links' upload speeds are drawn per host from a
// seeded, clamped log-normal (HomeLinks), the download is a fixed multiple of
// the upload, and the internet between homes is a fast core link with a
// home-to-home latency. Draws are portable: a splitmix64 stream and the
// Box-Muller transform, not <random>'s distributions (whose output differs
// between standard libraries), so a seed gives the same links everywhere.
// Leaves out: upload/download correlation with region, time-of-day
// congestion, per-pair latency (one latency for every pair), NAT traversal.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/registry.h"
#include "netmodel/net_config.h"

namespace slowpipe::whatif {

struct TimingPreset;

// A home-link distribution: upload = median_bps x exp(sigma x Z), Z standard
// normal, clamped to [min_bps, max_bps]; download = download_per_upload x
// upload. median_bps = 0: none (every host alike, net.* as given).
struct HomeLinks {
  double median_bps = 0;
  double sigma = 0;  // of ln(upload)
  double min_bps = 0, max_bps = 0;
  double download_per_upload = 1;
  std::string source;  // one line: where the numbers come from
};

// `hosts` uploads drawn from `links` with `seed` (net.seed); the same seed
// gives the same list, a longer list starts with a shorter one's.
std::vector<double> draw_uplinks_bps(const HomeLinks& links, int hosts, uint64_t seed);

// `net` with one access link per host of `stages` x `replicas` drawn from
// `links` (NetConfig::host_uplink_bps); `net` itself when links.median_bps is 0.
netmodel::NetConfig with_home_links(const netmodel::NetConfig& net, const HomeLinks& links,
                                    int stages, int replicas);

// One line for the printout: the distribution and the drawn links' spread.
std::string describe_home_links(const HomeLinks& links, const netmodel::NetConfig& net);

// Adds `swarm-gpt2xl` to the timing presets.
void add_swarm_presets(Registry<TimingPreset>& presets);

}  // namespace slowpipe::whatif
