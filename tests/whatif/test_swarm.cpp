// The swarm preset (whatif/swarm.h): its home links follow the stated
// clamped log-normal (quantiles against the normal CDF), the draws are
// deterministic per seed, the preset runs and prints the same twice, links
// that differ between replicas fall back to the full replay while links
// repeated on every replica fold to the same step, and slower links cost time
// (the control that the drawn links are used at all). Closed-form wire sizes
// as in test_what_if_run.cpp.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <sstream>
#include <string>

#include "common/errors.h"
#include "netmodel/replay.h"
#include "netmodel/replica_symmetry.h"
#include "whatif/swarm.h"
#include "whatif/what_if.h"

namespace nm = slowpipe::netmodel;
namespace wi = slowpipe::whatif;

namespace {

uint64_t swarm_wire_bytes(const slowpipe::compressors::ChannelSpec& spec_,
                          const std::vector<int64_t>& shape) {
  const std::string& spec = spec_.text();
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  std::string s = spec;
  if (s.rfind("aq(", 0) == 0) s = s.substr(3, s.size() - 4);
  if (s == "none") return 4 * n;
  if (s == "fp16") return 2 * n;
  if (s.size() > 1 && s[0] == 'q') return n * std::stoul(s.substr(1)) / 8;
  throw slowpipe::UsageError("unknown spec " + spec);
}

double normal_cdf(double x) {
  return 0.5 * std::erfc(-x / std::sqrt(2.0));
}

double fraction_below(const std::vector<double>& v, double x) {
  return static_cast<double>(std::count_if(v.begin(), v.end(), [x](double b) { return b < x; })) /
         static_cast<double>(v.size());
}

const wi::HomeLinks& swarm_links() {
  return wi::find_timing_preset("test", "swarm-gpt2xl").home_links;
}

}  // namespace

TEST_CASE("Swarm: home links follow the stated clamped log-normal, per seed") {
  const wi::HomeLinks& h = swarm_links();
  REQUIRE(h.median_bps > 0);
  REQUIRE(h.sigma > 0);
  REQUIRE(h.min_bps < h.median_bps);
  REQUIRE(h.median_bps < h.max_bps);
  const int n = 40000;
  const std::vector<double> up = wi::draw_uplinks_bps(h, n, 7);
  REQUIRE(up.size() == static_cast<size_t>(n));
  SECTION("within the bounds, clamped as often as the tails say") {
    const auto [lo, hi] = std::minmax_element(up.begin(), up.end());
    CHECK(*lo == h.min_bps);
    CHECK(*hi == h.max_bps);
    const double at_min = static_cast<double>(std::count(up.begin(), up.end(), h.min_bps)) / n;
    const double at_max = static_cast<double>(std::count(up.begin(), up.end(), h.max_bps)) / n;
    CHECK(at_min == Approx(normal_cdf(std::log(h.min_bps / h.median_bps) / h.sigma)).margin(0.006));
    CHECK(at_max ==
          Approx(1 - normal_cdf(std::log(h.max_bps / h.median_bps) / h.sigma)).margin(0.002));
  }
  SECTION("quantiles of ln(upload) are those of N(ln median, sigma)") {
    for (double q : {-1.0, -0.5, 0.0, 0.5, 1.0, 1.5}) {
      CAPTURE(q);
      CHECK(fraction_below(up, h.median_bps * std::exp(h.sigma * q)) ==
            Approx(normal_cdf(q)).margin(0.01));
    }
    // Control: a sigma half as wide puts far fewer hosts below median / e.
    CHECK(std::abs(fraction_below(up, h.median_bps * std::exp(-h.sigma)) - normal_cdf(-2.0)) >
          0.05);
  }
  SECTION("the same seed gives the same links; a longer list extends a shorter one") {
    CHECK(wi::draw_uplinks_bps(h, n, 7) == up);
    const std::vector<double> head = wi::draw_uplinks_bps(h, 100, 7);
    CHECK(std::equal(head.begin(), head.end(), up.begin()));
    CHECK(wi::draw_uplinks_bps(h, 100, 8) != head);
  }
}

TEST_CASE("Swarm: the preset runs at its replica count and prints the same twice") {
  wi::WhatIfConfig c;
  c.preset = "swarm-gpt2xl";
  nm::NetConfig net;
  wi::apply_preset_defaults(c, net);
  REQUIRE(c.replicas == wi::find_timing_preset("test", c.preset).replicas);
  REQUIRE(c.replicas > 100);
  c.spec_texts = {"q8", "q8", "q8"};
  c.specs = wi::parse_specs(c.spec_texts);
  std::ostringstream a, b;
  wi::run_timing(c, net, swarm_wire_bytes, a);
  wi::run_timing(c, net, swarm_wire_bytes, b);
  CHECK(a.str() == b.str());
  CHECK_THAT(a.str(), Catch::Contains("home links per host") &&
                          Catch::Contains(std::to_string(c.replicas) + " replica(s)"));
  // Another seed draws other links (the printed median of the draws moves).
  nm::NetConfig other = net;
  other.seed = 2;
  c.replicas = 16;  // a quick one: only the printout is compared
  c.replicas_given = true;
  std::ostringstream s1, s2;
  wi::run_timing(c, net, swarm_wire_bytes, s1);
  wi::run_timing(c, other, swarm_wire_bytes, s2);
  CHECK(s1.str() != s2.str());
}

TEST_CASE("Swarm: home links that differ replay in full; repeated per replica they fold") {
  wi::WhatIfConfig c;
  c.preset = "swarm-gpt2xl";
  c.model = "gpt2-small";
  c.stages = 4;
  c.batch = 4;
  c.replicas = 5;
  c.replicas_given = true;
  nm::NetConfig net;
  wi::apply_preset_defaults(c, net);
  const wi::ResolvedWhatIf r = wi::resolve_what_if(c);
  const int S = r.shape.stages, D = c.replicas;
  nm::NetConfig drawn =
      wi::with_home_links(wi::with_timing_device(net, r.device), swarm_links(), S, D);
  REQUIRE(drawn.host_uplink_bps.size() == static_cast<size_t>(S * D));
  CHECK_THAT(nm::net_asymmetry(drawn, S, D), Catch::Contains("access links"));
  // Replica 0's links repeated on every replica: symmetric again.
  nm::NetConfig repeated = drawn;
  for (size_t h = 0; h < repeated.host_uplink_bps.size(); ++h) {
    repeated.host_uplink_bps[h] = drawn.host_uplink_bps[h % static_cast<size_t>(S)];
  }
  REQUIRE(nm::net_asymmetry(repeated, S, D).empty());
  const auto trace = wi::make_synthetic_trace(r.shape, r.schedule, D, wi::CodecSpecs{},
                                              swarm_wire_bytes, nm::find_device("test", r.device));
  const double folded = nm::Simulator(repeated).replay(trace).step_s;
  const double full = nm::Simulator(repeated, /*fold_replicas=*/false).replay(trace).step_s;
  CHECK(folded == Approx(full).epsilon(1e-9));
  // The links are used: every host at the slowest drawn link is slower, every
  // host at the fastest faster.
  const double drawn_s = nm::Simulator(drawn).replay(trace).step_s;
  nm::NetConfig slow = drawn, fast = drawn;
  const auto [lo, hi] =
      std::minmax_element(drawn.host_uplink_bps.begin(), drawn.host_uplink_bps.end());
  slow.host_uplink_bps.assign(drawn.host_uplink_bps.size(), *lo);
  fast.host_uplink_bps.assign(drawn.host_uplink_bps.size(), *hi);
  CHECK(nm::Simulator(slow).replay(trace).step_s > drawn_s);
  CHECK(nm::Simulator(fast).replay(trace).step_s < drawn_s);
  // The run through `slowpipe timing` gives the full replay's step.
  c.bandwidths_bps = {net.bandwidth_bps > 0 ? net.bandwidth_bps : 10e9};
  const wi::WhatIfResult res = wi::run_what_if(c, net, swarm_wire_bytes);
  nm::NetConfig point = drawn;
  point.bandwidth_bps = c.bandwidths_bps[0];
  CHECK(res.rows.at(0).step_s ==
        Approx(nm::Simulator(point, false).replay(trace).step_s).epsilon(1e-12));
}
