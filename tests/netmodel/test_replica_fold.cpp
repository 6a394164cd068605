// The replica-symmetric (folded) replay against the full one on random small
// clusters: every schedule, both gradient-sync modes, NIC limits, hosts shared
// by stages, per-message overheads and heterogeneous net.links repeated on
// every replica. Both replays of the same full trace must agree on the step
// time, the bubble, every op's six times, every device's busy time and peak
// activations, and every resource's busy time and bytes, to 1e-9 relative;
// the compact trace's replay must give the same step. Where the replicas are
// not interchangeable (a net.links override on one replica only, jitter, a
// trace whose replicas differ) the replay must not fold, and a control checks
// that the difference it then ignores is real.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>

#include "common/errors.h"
#include "netmodel/replay.h"
#include "netmodel/replica_symmetry.h"
#include "pipeline/schedule.h"
#include "netmodel/schedule_trace.h"

namespace nm = slowpipe::netmodel;

namespace {

constexpr double kTol = 1e-9;

// A per-(kind, device, chunk, micro-batch) draw: the same on every replica.
double draw(uint64_t seed, const nm::TraceOp& op, int salt) {
  uint64_t h = seed ^ (static_cast<uint64_t>(op.kind) * 0x9E3779B97F4A7C15ull);
  for (int64_t v : {op.device, op.chunk, op.microbatch, salt}) {
    h = (h ^ static_cast<uint64_t>(v + 7)) * 0xff51afd7ed558ccdull;
    h ^= h >> 29;
  }
  return static_cast<double>(h >> 11) * 0x1.0p-53;  // [0, 1)
}

struct Case {
  nm::StepTrace trace;
  nm::NetConfig net;
  std::string what;
};

// A random cluster and step; `links`: net.links overrides, repeated on every
// replica (symmetric) or not.
Case random_case(std::mt19937_64& rng, const std::string& schedule, bool sharded, bool nic) {
  std::uniform_int_distribution<int> pick(0, 1 << 30);
  const nm::ScheduleEntry& entry = nm::find_schedule(schedule);
  const int S = 1 + pick(rng) % 4, D = 2 + pick(rng) % 5;
  const int v = entry.virtual_stages && pick(rng) % 2 ? 2 : 1;
  const int M = v > 1 ? S * (1 + pick(rng) % 2) : 1 + pick(rng) % 4;
  const uint64_t seed = rng();
  Case c;
  c.trace = nm::build_trace(
      schedule, S, M, D,
      [&](nm::TraceOp& op) {
        op.compute_s = 1e-3 + 0.02 * draw(seed, op, 0);
        op.encode_s = 2e-4 * draw(seed, op, 1);
        op.decode_s = 2e-4 * draw(seed, op, 2);
        const bool message = op.kind == nm::OpKind::kSendActivation ||
                             op.kind == nm::OpKind::kSendGradient ||
                             op.kind == nm::OpKind::kAllReduce;
        if (message) op.bytes = static_cast<uint64_t>(1e5 + 4e6 * draw(seed, op, 3));
      },
      v);
  c.trace.sharded_exchange = sharded;
  c.net.preset = "1Gbps";
  c.net.compute = nm::parse_compute_spec("measured");
  c.net.bandwidth_bps = 1e8 * (1 + pick(rng) % 50);
  c.net.latency_s = 1e-4 * (pick(rng) % 100);
  c.net.overhead_bytes = pick(rng) % 2 ? 64 : 0;
  c.net.stages_per_host = 1 + pick(rng) % 2;
  if (nic) c.net.nic_bandwidth_bps = 1e8 * (1 + pick(rng) % 30);
  c.what = schedule + " S=" + std::to_string(S) + " D=" + std::to_string(D) +
           " M=" + std::to_string(M) + " v=" + std::to_string(v) +
           (sharded ? " sharded" : " ring") + (nic ? " nic" : "") +
           " per_host=" + std::to_string(c.net.stages_per_host);
  return c;
}

int hosts_per_replica(const Case& c) {
  return nm::host_of(c.net, c.trace.stages, 1, 0);
}

// net.links: a few pairs (inside replica 0, or from replica 0 to another),
// each overridden on all D copies (`everywhere`) or on replica 0's only.
std::string random_links(std::mt19937_64& rng, const Case& c, bool everywhere) {
  const int per = hosts_per_replica(c), D = c.trace.replicas, H = per * D;
  std::string out;
  for (int n = 0; n < 1 + static_cast<int>(rng() % 3); ++n) {
    const int a = static_cast<int>(rng() % per);
    int b = static_cast<int>(rng() % H);
    if (!everywhere) b = static_cast<int>(rng() % per);  // replica 0's own: moved by the turn
    if (a == b) continue;
    const std::string bw = std::to_string(50 + rng() % 2000) + "Mbps";
    const std::string lat = rng() % 2 ? ":" + std::to_string(rng() % 20) + "ms" : "";
    for (int k = 0; k < (everywhere ? D : 1); ++k) {
      out += (out.empty() ? "" : ",") + std::to_string((a + k * per) % H) + "-" +
             std::to_string((b + k * per) % H) + ":" + bw + lat;
    }
  }
  return out;
}

void check_close(double fast, double full, double scale, const std::string& what) {
  INFO(what << ": folded " << fast << " full " << full);
  CHECK(std::abs(fast - full) <= kTol * std::max(scale, std::abs(full)));
}

// The folded replay of `c` against the full one, field by field.
void check_fold(const Case& c) {
  INFO(c.what << " links '" << c.net.links_text << "'");
  nm::Simulator full_sim(c.net, /*fold_replicas=*/false), fold_sim(c.net);
  const nm::Timeline full = full_sim.replay(c.trace);
  const nm::Timeline fold = fold_sim.replay(c.trace);
  REQUIRE(fold_sim.folded());
  REQUIRE_FALSE(full_sim.folded());
  const double T = full.step_s;
  check_close(fold.step_s, T, 0, "step");
  check_close(fold.bubble_fraction, full.bubble_fraction, 1, "bubble");
  REQUIRE(fold.timing.size() == full.timing.size());
  for (size_t i = 0; i < full.timing.size(); ++i) {
    const nm::OpTiming &a = fold.timing[i], &b = full.timing[i];
    const std::string op = "op " + std::to_string(i);
    check_close(a.start_s, b.start_s, T, op + " start");
    check_close(a.end_s, b.end_s, T, op + " end");
    check_close(a.encode_start_s, b.encode_start_s, T, op + " encode start");
    check_close(a.encode_end_s, b.encode_end_s, T, op + " encode end");
    check_close(a.decode_start_s, b.decode_start_s, T, op + " decode start");
    check_close(a.decode_end_s, b.decode_end_s, T, op + " decode end");
  }
  REQUIRE(fold.device_busy_s.size() == full.device_busy_s.size());
  for (size_t d = 0; d < full.device_busy_s.size(); ++d) {
    check_close(fold.device_busy_s[d], full.device_busy_s[d], T, "busy");
    CHECK(fold.peak_activations[d] == full.peak_activations[d]);
  }
  std::map<std::string, nm::LinkUsage> links;
  for (const auto& l : full.links) links[l.name] = l;
  CHECK(fold.links.size() == full.links.size());
  for (const auto& l : fold.links) {
    INFO(l.name);
    REQUIRE(links.count(l.name) == 1);
    check_close(l.busy_s, links[l.name].busy_s, T, "link busy");
    check_close(l.bytes, links[l.name].bytes, 1, "link bytes");
  }
  // The compact trace: replica 0's ops, the same step.
  nm::Simulator compact_sim(c.net);
  const nm::Timeline compact = compact_sim.replay(nm::compact_trace(c.trace));
  CHECK(compact_sim.folded());
  CHECK(compact.replicated);
  check_close(compact.step_s, T, 0, "compact step");
  check_close(compact.bubble_fraction, full.bubble_fraction, 1, "compact bubble");
}

}  // namespace

TEST_CASE("Replica fold: the folded replay equals the full one on random symmetric clusters") {
  std::mt19937_64 rng(20261126);
  int cases = 0;
  for (const std::string& schedule : nm::schedule_names()) {
    if (schedule.rfind("test-", 0) == 0) continue;  // broken on purpose (test_schedule.cpp)
    for (bool sharded : {false, true}) {
      for (bool nic : {false, true}) {
        for (int k = 0; k < 6; ++k) {
          Case c = random_case(rng, schedule, sharded, nic);
          if (k % 2 == 1) nm::set_links(c.net, random_links(rng, c, /*everywhere=*/true));
          REQUIRE(nm::net_asymmetry(c.net, c.trace.stages, c.trace.replicas).empty());
          check_fold(c);
          ++cases;
        }
      }
    }
  }
  CHECK(cases >= 4 * 2 * 2 * 6);
}

TEST_CASE("Replica fold: falls back to the full replay where the replicas differ") {
  std::mt19937_64 rng(7);
  for (int k = 0; k < 20; ++k) {
    Case c = random_case(rng, k % 2 ? "1f1b" : "gpipe", k % 3 == 0, k % 4 == 0);
    INFO(c.what);
    std::string expect;
    if (k % 2 == 0 && hosts_per_replica(c) >= 2) {
      nm::set_links(c.net, random_links(rng, c, /*everywhere=*/false));
      if (c.net.links.empty()) continue;
      expect = "net.links";
    } else {
      c.net.jitter_s = 1e-3;
      expect = "net.jitter";
    }
    CHECK_THAT(nm::net_asymmetry(c.net, c.trace.stages, c.trace.replicas), Catch::Contains(expect));
    nm::Simulator auto_sim(c.net), full_sim(c.net, false);
    const nm::Timeline a = auto_sim.replay(c.trace);
    CHECK_FALSE(auto_sim.folded());
    CHECK(a.step_s == full_sim.replay(c.trace).step_s);  // the same replay, the same draws
    // A compact trace is expanded first: the full replay again.
    nm::Simulator compact_sim(c.net), again(c.net, false);
    const nm::Timeline b = compact_sim.replay(nm::compact_trace(c.trace));
    CHECK_FALSE(compact_sim.folded());
    CHECK_FALSE(b.replicated);
    CHECK(b.step_s == again.replay(c.trace).step_s);
  }
}

TEST_CASE("Replica fold: a trace whose replicas differ is replayed in full, and it matters") {
  std::mt19937_64 rng(11);
  Case c = random_case(rng, "gpipe", false, false);
  REQUIRE(nm::replicas_alike(c.trace));
  nm::StepTrace slower = c.trace;
  for (auto& op : slower.ops) {
    if (op.replica == 1 && op.kind == nm::OpKind::kForward) op.compute_s *= 3;
  }
  CHECK_FALSE(nm::replicas_alike(slower));
  nm::Simulator sim(c.net), reference(c.net, false);
  const nm::Timeline t = sim.replay(slower);
  CHECK_FALSE(sim.folded());
  CHECK(t.step_s == reference.replay(slower).step_s);
  // Control: replica 1's slower forwards change the step, so folding it onto
  // replica 0 (which the check refuses) would be wrong.
  CHECK(t.step_s > nm::Simulator(c.net).replay(c.trace).step_s * (1 + 1e-6));
}

TEST_CASE("Replica fold: several steps on one simulator stay equal to the full replay") {
  std::mt19937_64 rng(3);
  for (int k = 0; k < 4; ++k) {
    const Case c = random_case(rng, "zb-h1", k % 2 == 1, k >= 2);
    nm::Simulator fold(c.net), full(c.net, false);
    for (int step = 0; step < 3; ++step) {
      check_close(fold.replay(c.trace).step_s, full.replay(c.trace).step_s, 0, c.what);
      CHECK(fold.folded());
    }
    check_close(fold.elapsed_s(), full.elapsed_s(), 0, "elapsed");
  }
}

TEST_CASE("Replica fold: an inconsistent trace is reported as the full replay reports it") {
  std::mt19937_64 rng(5);
  const Case c = random_case(rng, "gpipe", false, false);
  nm::StepTrace bad = c.trace;
  // Device by device (each stream keeps its order): replica 0's ops are no
  // longer the first ones, so an index into its compact trace would differ.
  std::stable_sort(bad.ops.begin(), bad.ops.end(),
                   [](const nm::TraceOp& a, const nm::TraceOp& b) { return a.device < b.device; });
  for (auto& op : bad.ops) {
    if (op.kind == nm::OpKind::kForward && op.microbatch == 0 && op.device == bad.stages - 1)
      op.compute_s = -1;  // on every replica
  }
  REQUIRE(nm::replicas_alike(bad));
  std::string full, folded;
  try {
    nm::Simulator(c.net, false).replay(bad);
  } catch (const slowpipe::DataError& e) {
    full = e.what();
  }
  try {
    nm::Simulator(c.net).replay(bad);
  } catch (const slowpipe::DataError& e) {
    folded = e.what();
  }
  CHECK_THAT(full, Catch::Contains("negative or non-finite"));
  CHECK(folded == full);
}
