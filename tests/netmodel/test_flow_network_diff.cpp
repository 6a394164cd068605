// FlowNetwork against a naive reference on random scenarios with hundreds of
// flows: the reference recomputes every rate from scratch at every event by
// textbook progressive filling over individual flows (plain loops, no path
// classes, no heaps, no cached components), and both must agree on every
// flow's completion time to 1e-9 relative. A control shows that the scenarios
// tell max-min fairness from a plausible wrong sharing rule.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "netmodel/internal/flow_network.h"

namespace nm = slowpipe::netmodel;

namespace {

constexpr double kInf = nm::FlowNetwork::kInfinite;

struct Scenario {
  std::vector<double> capacity_bps;          // (R)
  std::vector<std::vector<uint32_t>> paths;  // (F) resources, in any order
  std::vector<double> start_s, bits;         // (F)
};

using RateRule = std::function<std::vector<double>(const std::vector<double>& capacity_bps,
                                                   const std::vector<std::vector<uint32_t>>&)>;

// Max-min rates by progressive filling, one flow at a time: find the smallest
// fair share (capacity left / unfixed flows) over all resources, fix every
// unfixed flow crossing a resource at that share, repeat.
std::vector<double> naive_progressive_filling(const std::vector<double>& capacity_bps,
                                              const std::vector<std::vector<uint32_t>>& paths) {
  const size_t F = paths.size(), R = capacity_bps.size();
  std::vector<double> rate(F, 0.0), left = capacity_bps;
  std::vector<bool> fixed(F, false);
  for (size_t f = 0; f < F; ++f) {
    if (paths[f].empty()) {  // crosses nothing: unconstrained
      fixed[f] = true;
      rate[f] = kInf;
    }
  }
  for (;;) {
    std::vector<int> unfixed(R, 0);
    for (size_t f = 0; f < F; ++f) {
      for (uint32_t r : paths[f]) unfixed[r] += fixed[f] ? 0 : 1;
    }
    bool any = false;
    for (size_t f = 0; f < F; ++f) any |= !fixed[f];
    if (!any) return rate;
    double share = kInf;
    for (size_t r = 0; r < R; ++r) {
      if (unfixed[r] > 0) share = std::min(share, std::max(0.0, left[r]) / unfixed[r]);
    }
    std::vector<bool> bottleneck(R, false);
    for (size_t r = 0; r < R; ++r) {
      bottleneck[r] = unfixed[r] > 0 && std::max(0.0, left[r]) / unfixed[r] <= share * (1 + 1e-12);
    }
    for (size_t f = 0; f < F; ++f) {
      if (fixed[f]) continue;
      bool hit = share == kInf;  // only infinite resources left
      for (uint32_t r : paths[f]) hit = hit || bottleneck[r];
      if (!hit) continue;
      fixed[f] = true;
      rate[f] = share;
      if (share == kInf) continue;
      for (uint32_t r : paths[f]) left[r] -= share;
    }
  }
}

// A wrong rule for the control: each flow gets the smallest equal split of
// its resources, and capacity a bottlenecked flow leaves unused is lost.
std::vector<double> equal_split(const std::vector<double>& capacity_bps,
                                const std::vector<std::vector<uint32_t>>& paths) {
  std::vector<int> count(capacity_bps.size(), 0);
  for (const auto& p : paths) {
    for (uint32_t r : p) ++count[r];
  }
  std::vector<double> rate;
  for (const auto& p : paths) {
    double x = kInf;
    for (uint32_t r : p) x = std::min(x, capacity_bps[r] / count[r]);
    rate.push_back(x);
  }
  return rate;
}

// Event to event: at each event the rates of all active flows come from
// `rule`, from scratch; flows whose bits run out within 1e-12 (relative) of
// the next event end there; starts at an instant come after the ends.
std::vector<double> naive_finish_times(const Scenario& sc, const RateRule& rule,
                                       size_t* peak_active = nullptr) {
  const size_t F = sc.bits.size();
  std::vector<double> finish(F, -1), remaining = sc.bits;
  std::vector<bool> started(F, false);
  double now = 0;
  for (;;) {
    for (size_t f = 0; f < F; ++f) started[f] = started[f] || sc.start_s[f] <= now;
    std::vector<size_t> active;
    std::vector<std::vector<uint32_t>> active_paths;
    for (size_t f = 0; f < F; ++f) {
      if (started[f] && finish[f] < 0) {
        active.push_back(f);
        active_paths.push_back(sc.paths[f]);
      }
    }
    if (peak_active) *peak_active = std::max(*peak_active, active.size());
    double next_start = kInf;
    for (size_t f = 0; f < F; ++f) {
      if (!started[f]) next_start = std::min(next_start, sc.start_s[f]);
    }
    if (active.empty() && next_start == kInf) return finish;
    const std::vector<double> rate = rule(sc.capacity_bps, active_paths);
    std::vector<double> ends(active.size());
    double next = next_start;
    for (size_t i = 0; i < active.size(); ++i) {
      const double left = remaining[active[i]];
      ends[i] = left <= 0 || rate[i] == kInf ? now : rate[i] > 0 ? now + left / rate[i] : kInf;
      next = std::min(next, ends[i]);
    }
    for (size_t i = 0; i < active.size(); ++i) {
      const size_t f = active[i];
      if (ends[i] <= next + 1e-12 * std::max(1.0, next)) {
        finish[f] = next;
      } else {
        remaining[f] -= rate[i] * (next - now);
      }
    }
    now = next;
  }
}

// FlowNetwork, driven the way the replay drives it: collect at the next
// finish while it comes no later than the next start.
std::vector<double> flow_network_finish_times(const Scenario& sc) {
  const size_t F = sc.bits.size();
  nm::FlowNetwork net;
  for (double c : sc.capacity_bps) net.add_resource("r", c);
  std::vector<size_t> order(F);
  for (size_t f = 0; f < F; ++f) order[f] = f;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return sc.start_s[a] < sc.start_s[b]; });
  std::vector<double> got(F, -1);
  std::vector<size_t> flow_of_id;
  std::vector<uint32_t> done;
  size_t next_start = 0;
  while (next_start < F || net.active_flows() > 0) {
    const double t_start = next_start < F ? sc.start_s[order[next_start]] : kInf;
    if (net.next_finish_s() <= t_start) {
      const double t = net.next_finish_s();
      done.clear();
      net.collect_finished(t, done);
      for (uint32_t id : done) got[flow_of_id[id]] = t;
    } else {
      const size_t f = order[next_start++];
      const uint32_t id =
          net.start_flow(t_start, sc.paths[f].data(), sc.paths[f].size(), sc.bits[f]);
      if (flow_of_id.size() <= id) flow_of_id.resize(id + 1);
      flow_of_id[id] = f;
    }
  }
  return got;
}

// R resources; a pool of distinct-ish paths, so that many flows share a path
// (given in shuffled orders); starts on a coarse grid, so that some coincide.
Scenario random_scenario(std::mt19937_64& rng, size_t flows, bool infinite_resources) {
  Scenario sc;
  const int R = 4 + static_cast<int>(rng() % 9);
  for (int r = 0; r < R; ++r) {
    const bool inf = infinite_resources && rng() % 5 == 0;
    sc.capacity_bps.push_back(inf ? kInf : 1e6 * (1 + static_cast<double>(rng() % 100)));
  }
  std::vector<std::vector<uint32_t>> pool(5 + rng() % 30);
  for (auto& p : pool) {
    const size_t len = infinite_resources ? rng() % 4 : 1 + rng() % 4;  // empty paths too
    for (size_t k = 0; k < len; ++k) {
      const auto r = static_cast<uint32_t>(rng() % R);
      if (std::find(p.begin(), p.end(), r) == p.end()) p.push_back(r);
    }
  }
  for (size_t f = 0; f < flows; ++f) {
    std::vector<uint32_t> p = pool[rng() % pool.size()];
    std::shuffle(p.begin(), p.end(), rng);
    sc.paths.push_back(p);
    sc.start_s.push_back(0.01 * static_cast<double>(rng() % 1000));
    const bool empty = rng() % 50 == 0;
    sc.bits.push_back(empty ? 0.0 : std::exp(std::uniform_real_distribution<>(10, 18)(rng)));
  }
  return sc;
}

void require_same_finish_times(const Scenario& sc) {
  const std::vector<double> ref = naive_finish_times(sc, naive_progressive_filling);
  const std::vector<double> got = flow_network_finish_times(sc);
  for (size_t f = 0; f < ref.size(); ++f) {
    INFO("flow " << f << " of " << ref.size());
    REQUIRE(ref[f] >= 0);
    REQUIRE(got[f] == Approx(ref[f]).epsilon(1e-9).margin(0));
  }
}

}  // namespace

TEST_CASE("FlowNetwork diff: finish times match naive progressive filling on random scenarios") {
  std::mt19937_64 rng(20261123);
  SECTION("finite resources, hundreds of flows") {
    for (int trial = 0; trial < 12; ++trial) {
      const Scenario sc = random_scenario(rng, 200 + rng() % 300, false);
      require_same_finish_times(sc);
    }
  }
  SECTION("some infinite resources, empty paths and empty flows") {
    for (int trial = 0; trial < 6; ++trial) {
      const Scenario sc = random_scenario(rng, 200 + rng() % 200, true);
      require_same_finish_times(sc);
    }
  }
}

TEST_CASE("FlowNetwork diff: the scenarios are busy enough to tell max-min from a wrong rule") {
  std::mt19937_64 rng(7);
  const Scenario sc = random_scenario(rng, 300, false);
  size_t peak = 0;
  const std::vector<double> ref = naive_finish_times(sc, naive_progressive_filling, &peak);
  CHECK(peak >= 50);  // many flows share resources at once
  // Control: the equal-split rule (no redistribution of unused capacity)
  // misses the FlowNetwork's finish times by far more than the tolerance.
  const std::vector<double> wrong = naive_finish_times(sc, equal_split);
  const std::vector<double> got = flow_network_finish_times(sc);
  size_t differ = 0;
  for (size_t f = 0; f < got.size(); ++f) {
    CHECK(got[f] == Approx(ref[f]).epsilon(1e-9).margin(0));
    differ += std::abs(got[f] - wrong[f]) > 1e-6 * std::abs(got[f]) ? 1 : 0;
  }
  CHECK(differ > got.size() / 4);
}

namespace {

// Two networks driven alike, one resuming its fillings from the last one's
// record and one always filling from scratch: after every start and every
// collect, the same ids, the same next finish and the same rate for every
// active flow, bitwise. Returns the resumed fillings.
size_t require_resume_bitwise_equal(const Scenario& sc, std::mt19937_64& rng) {
  nm::FlowNetwork resumed, full;
  full.set_resume_filling(false);
  for (double c : sc.capacity_bps) {
    resumed.add_resource("r", c);
    full.add_resource("r", c);
  }
  std::vector<size_t> order(sc.bits.size());
  for (size_t f = 0; f < order.size(); ++f) order[f] = f;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return sc.start_s[a] < sc.start_s[b]; });
  std::vector<uint32_t> active, done_a, done_b;
  size_t next = 0;
  while (next < order.size() || full.active_flows() > 0) {
    const double t_start = next < order.size() ? sc.start_s[order[next]] : kInf;
    if (full.next_finish_s() <= t_start) {
      const double t = full.next_finish_s();
      done_a.clear();
      done_b.clear();
      resumed.collect_finished(t, done_a);
      full.collect_finished(t, done_b);
      REQUIRE(done_a == done_b);
      for (uint32_t id : done_b) active.erase(std::find(active.begin(), active.end(), id));
    } else {
      const size_t f = order[next++];
      const auto& p = sc.paths[f];
      const uint32_t a = resumed.start_flow(t_start, p.data(), p.size(), sc.bits[f]);
      REQUIRE(a == full.start_flow(t_start, p.data(), p.size(), sc.bits[f]));
      active.push_back(a);
    }
    REQUIRE(resumed.next_finish_s() == full.next_finish_s());
    for (uint32_t id : active) REQUIRE(resumed.rate_bps(id) == full.rate_bps(id));
    if (rng() % 500 == 0) {  // now and then, from scratch
      resumed.reset();
      full.reset();
      active.clear();
    }
  }
  return resumed.resumed_fillings();
}

}  // namespace

TEST_CASE("FlowNetwork diff: a resumed filling gives the rates of a full one, bitwise") {
  std::mt19937_64 rng(38);
  size_t resumed = 0;
  for (int trial = 0; trial < 16; ++trial) {
    const Scenario sc = random_scenario(rng, 300 + rng() % 500, trial % 4 == 3);
    resumed += require_resume_bitwise_equal(sc, rng);
  }
  CHECK(resumed > 1000);  // the fast path ran
}
