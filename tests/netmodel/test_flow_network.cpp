// FlowNetwork: max-min fair rates against the textbook example, the closed
// forms for equal flows, and the max-min characterisation on random instances
// (every flow has a saturated bottleneck on which no flow gets more).
#include <catch2/catch.hpp>
#include <random>
#include <vector>

#include "netmodel/internal/flow_network.h"

namespace nm = slowpipe::netmodel;

TEST_CASE("FlowNetwork: textbook three flows over two links") {
  // Link A (1 Gbit/s) carries flows 0 and 1; link B (2 Gbit/s) carries 0 and 2.
  // Max-min: A is the bottleneck, flows 0 and 1 get 0.5 each, flow 2 the rest, 1.5.
  nm::FlowNetwork net;
  const uint32_t a = net.add_resource("A", 1e9), b = net.add_resource("B", 2e9);
  const uint32_t p0[] = {a, b}, p1[] = {a}, p2[] = {b};
  const uint32_t f0 = net.start_flow(0, p0, 2, 1e9);
  const uint32_t f1 = net.start_flow(0, p1, 1, 1e9);
  const uint32_t f2 = net.start_flow(0, p2, 1, 1e9);
  CHECK(net.rate_bps(f0) == Approx(0.5e9));
  CHECK(net.rate_bps(f1) == Approx(0.5e9));
  CHECK(net.rate_bps(f2) == Approx(1.5e9));
  // Flow 2 ends first (1e9 / 1.5e9 s); then B no longer binds and A still splits.
  CHECK(net.next_finish_s() == Approx(1.0 / 1.5));
  std::vector<uint32_t> done;
  net.collect_finished(net.next_finish_s(), done);
  REQUIRE(done == std::vector<uint32_t>{f2});
  CHECK(net.rate_bps(f0) == Approx(0.5e9));
  CHECK(net.next_finish_s() == Approx(2.0));
  done.clear();
  net.collect_finished(2.0, done);
  CHECK(done.size() == 2);
  CHECK(net.active_flows() == 0);
  CHECK(net.busy_s(a) == Approx(2.0));
  CHECK(net.busy_s(b) == Approx(2.0));
}

TEST_CASE("FlowNetwork: n equal flows on one link finish together at n times the lone time") {
  for (int n : {1, 2, 3, 7}) {
    nm::FlowNetwork net;
    const uint32_t l = net.add_resource("L", 1e8);
    const double bits = 8e6;
    for (int i = 0; i < n; ++i) net.start_flow(0, &l, 1, bits);
    const double lone_s = bits / 1e8;
    CHECK(net.next_finish_s() == Approx(n * lone_s));
    std::vector<uint32_t> done;
    net.collect_finished(net.next_finish_s(), done);
    CHECK(done.size() == static_cast<size_t>(n));
  }
}

TEST_CASE("FlowNetwork: a late flow slows an earlier one, rates recomputed at start and end") {
  nm::FlowNetwork net;
  const uint32_t l = net.add_resource("L", 1.0);
  const uint32_t a = net.start_flow(0, &l, 1, 10);  // alone: would end at 10
  net.start_flow(4, &l, 1, 2);                      // from t=4 both get 0.5; b ends at 8
  CHECK(net.next_finish_s() == Approx(8));
  std::vector<uint32_t> done;
  net.collect_finished(8, done);
  CHECK(done.size() == 1);
  // a sent 4 + 2 = 6 bits, 4 left at full rate: ends at 12.
  CHECK(net.rate_bps(a) == Approx(1.0));
  CHECK(net.next_finish_s() == Approx(12));
}

TEST_CASE("FlowNetwork: allocation is max-min fair on random instances") {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    nm::FlowNetwork net;
    const int R = 1 + static_cast<int>(rng() % 6), F = 1 + static_cast<int>(rng() % 8);
    std::vector<double> cap(R);
    for (int r = 0; r < R; ++r) {
      cap[r] = 1.0 + static_cast<double>(rng() % 10);
      net.add_resource("r" + std::to_string(r), cap[r]);
    }
    std::vector<std::vector<uint32_t>> paths(F);
    std::vector<uint32_t> ids(F);
    for (int f = 0; f < F; ++f) {
      for (int r = 0; r < R; ++r) {
        if (rng() % 2) paths[f].push_back(static_cast<uint32_t>(r));
      }
      if (paths[f].empty()) paths[f].push_back(static_cast<uint32_t>(rng() % R));
      ids[f] = net.start_flow(0, paths[f].data(), paths[f].size(), 1e6);
    }
    std::vector<double> load(R, 0.0);
    for (int f = 0; f < F; ++f) {
      for (uint32_t r : paths[f]) load[r] += net.rate_bps(ids[f]);
    }
    for (int r = 0; r < R; ++r) REQUIRE(load[r] <= cap[r] * (1 + 1e-9));  // feasible
    for (int f = 0; f < F; ++f) {
      const double x = net.rate_bps(ids[f]);
      REQUIRE(x > 0);
      bool has_bottleneck = false;
      for (uint32_t r : paths[f]) {
        if (load[r] < cap[r] * (1 - 1e-9)) continue;  // not saturated
        bool largest = true;
        for (int g = 0; g < F; ++g) {
          for (uint32_t q : paths[g]) {
            if (q == r && net.rate_bps(ids[g]) > x * (1 + 1e-9)) largest = false;
          }
        }
        has_bottleneck |= largest;
      }
      REQUIRE(has_bottleneck);
    }
  }
}

TEST_CASE("FlowNetwork: infinite capacity and empty paths finish at once") {
  nm::FlowNetwork net;
  const uint32_t l = net.add_resource("free", nm::FlowNetwork::kInfinite);
  net.start_flow(3, &l, 1, 1e12);
  net.start_flow(3, nullptr, 0, 5);
  CHECK(net.next_finish_s() == 3);
  std::vector<uint32_t> done;
  net.collect_finished(3, done);
  CHECK(done.size() == 2);
}

namespace {

// Naive reference: water-filling from the definition. All unfrozen flows grow
// at the same pace; a saturated resource freezes the flows crossing it.
std::vector<double> naive_max_min(const std::vector<double>& cap,
                                  const std::vector<std::vector<uint32_t>>& paths) {
  const size_t F = paths.size();
  std::vector<double> rate(F, 0.0);
  std::vector<bool> frozen(F, false);
  for (;;) {
    std::vector<double> load(cap.size(), 0.0);
    std::vector<int> growing(cap.size(), 0);
    for (size_t f = 0; f < F; ++f) {
      for (uint32_t r : paths[f]) {
        load[r] += rate[f];
        growing[r] += frozen[f] ? 0 : 1;
      }
    }
    double delta = 1e300;
    for (size_t r = 0; r < cap.size(); ++r) {
      if (growing[r] > 0) delta = std::min(delta, (cap[r] - load[r]) / growing[r]);
    }
    if (delta == 1e300) return rate;
    for (size_t f = 0; f < F; ++f) rate[f] += frozen[f] ? 0 : delta;
    std::vector<double> load2(cap.size(), 0.0);
    for (size_t f = 0; f < F; ++f) {
      for (uint32_t r : paths[f]) load2[r] += rate[f];
    }
    for (size_t f = 0; f < F; ++f) {
      for (uint32_t r : paths[f]) {
        if (load2[r] >= cap[r] * (1 - 1e-12)) frozen[f] = true;
      }
    }
  }
}

}  // namespace

TEST_CASE("FlowNetwork: finish times match a naive full-recompute simulation") {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 100; ++trial) {
    const int R = 1 + static_cast<int>(rng() % 5), F = 1 + static_cast<int>(rng() % 10);
    std::vector<double> cap(R);
    nm::FlowNetwork net;
    for (int r = 0; r < R; ++r) {
      cap[r] = 1.0 + static_cast<double>(rng() % 4);
      net.add_resource("r", cap[r]);
    }
    std::vector<std::vector<uint32_t>> paths(F);
    std::vector<double> start(F), bits(F);
    for (int f = 0; f < F; ++f) {
      for (int r = 0; r < R; ++r) {
        if (rng() % 3 == 0) paths[f].push_back(static_cast<uint32_t>(r));
      }
      if (paths[f].empty()) paths[f].push_back(static_cast<uint32_t>(rng() % R));
      start[f] = static_cast<double>(rng() % 6);
      bits[f] = 1.0 + static_cast<double>(rng() % 10);
    }
    // Reference: event to event, recomputing every rate from scratch.
    std::vector<double> ref_finish(F, -1), remaining = bits;
    {
      double now = 0;
      for (;;) {
        std::vector<size_t> act;
        std::vector<std::vector<uint32_t>> act_paths;
        for (int f = 0; f < F; ++f) {
          if (start[f] <= now && ref_finish[f] < 0) {
            act.push_back(f);
            act_paths.push_back(paths[f]);
          }
        }
        double next_start = 1e300;
        for (int f = 0; f < F; ++f) {
          if (start[f] > now) next_start = std::min(next_start, start[f]);
        }
        if (act.empty() && next_start == 1e300) break;
        const auto rate = naive_max_min(cap, act_paths);
        double next = next_start;
        for (size_t i = 0; i < act.size(); ++i)
          next = std::min(next, now + remaining[act[i]] / rate[i]);
        for (size_t i = 0; i < act.size(); ++i) {
          remaining[act[i]] -= rate[i] * (next - now);
          if (remaining[act[i]] <= 1e-9 * bits[act[i]]) ref_finish[act[i]] = next;
        }
        now = next;
      }
    }
    // FlowNetwork, driven the way the replay drives it.
    std::vector<double> got(F, -1);
    std::vector<int> order(F);
    for (int f = 0; f < F; ++f) order[f] = f;
    std::sort(order.begin(), order.end(), [&](int a, int b) { return start[a] < start[b]; });
    std::vector<int> flow_of(64, -1);
    size_t next_start = 0;
    std::vector<uint32_t> done;
    while (next_start < order.size() || net.active_flows() > 0) {
      const double t_start = next_start < order.size() ? start[order[next_start]] : 1e300;
      if (net.next_finish_s() <= t_start) {
        const double t = net.next_finish_s();
        done.clear();
        net.collect_finished(t, done);
        for (uint32_t id : done) got[flow_of[id]] = t;
      } else {
        const int f = order[next_start++];
        const uint32_t id = net.start_flow(t_start, paths[f].data(), paths[f].size(), bits[f]);
        flow_of[id] = f;
      }
    }
    for (int f = 0; f < F; ++f) REQUIRE(got[f] == Approx(ref_finish[f]).epsilon(1e-9));
  }
}

TEST_CASE("FlowNetwork: paths of any length, and a reused id whose path grows") {
  // A chain of 40 resources: the lone flow gets the smallest capacity.
  nm::FlowNetwork net;
  std::vector<uint32_t> chain;
  chain.reserve(40);
  for (int i = 0; i < 40; ++i) chain.push_back(net.add_resource("r", i == 17 ? 1e6 : 1e9));
  const uint32_t a = net.start_flow(0, chain.data(), 2, 1e6);  // id 0, 2 resources
  std::vector<uint32_t> done;
  net.collect_finished(net.next_finish_s(), done);
  REQUIRE(done == std::vector<uint32_t>{a});
  // The same id comes back with a 40-resource path, next to a short flow.
  const uint32_t short_path[] = {chain[39]};
  const uint32_t c = net.start_flow(1, chain.data(), chain.size(), 1e6);
  const uint32_t b = net.start_flow(1, short_path, 1, 1e9);
  CHECK(c == a);
  CHECK(net.rate_bps(c) == Approx(1e6));
  CHECK(net.rate_bps(b) == Approx(1e9 - 1e6));
  done.clear();
  net.collect_finished(2.0, done);
  CHECK(done == std::vector<uint32_t>{c});  // 1 Mbit at 1 Mbit/s: t = 2
  // The short flow's path was not overwritten by the long one.
  CHECK(net.rate_bps(b) == Approx(1e9));
  CHECK(net.active_flows() == 1);
}
