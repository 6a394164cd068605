// Replay against closed forms: a lone transfer, GPipe and 1F1B with free
// links, ring all-reduce; asynchronous sends, codec time on the streams,
// determinism with jitter, inconsistent traces, and the Chrome trace export.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/errors.h"
#include "netmodel/chrome_trace.h"
#include "netmodel/replay.h"
#include "netmodel/schedule_trace.h"
#include "netmodel/internal/topology.h"

namespace nm = slowpipe::netmodel;

namespace {

nm::NetConfig link(double bandwidth_bps, double latency_s, const std::string& compute) {
  nm::NetConfig c;
  c.preset = "1Gbps";
  c.bandwidth_bps = bandwidth_bps;
  c.latency_s = latency_s;
  c.efficiency = 1.0;
  c.compute = nm::parse_compute_spec(compute);
  return c;
}

nm::NetConfig free_links(const std::string& compute) {
  nm::NetConfig c;
  c.preset = "none";
  c.compute = nm::parse_compute_spec(compute);
  return c;
}

// S stages, M micro-batches, every send `bytes`.
nm::StepTrace uniform(const std::string& schedule, int S, int M, int D, uint64_t bytes) {
  return nm::build_trace(schedule, S, M, D, [&](nm::TraceOp& op) { op.bytes = bytes; });
}

}  // namespace

TEST_CASE("Replay: a lone transfer takes latency + bytes / (bandwidth x efficiency)") {
  nm::NetConfig c = link(100e6, 10e-3, "fixed:0");
  c.efficiency = 0.957;
  const nm::StepTrace t = uniform("gpipe", 2, 1, 1, 1000000);
  const nm::Timeline tl = nm::replay(t, c);
  const double expect = 10e-3 + 8e6 / (100e6 * 0.957);
  // forward send + gradient send, nothing else takes time
  CHECK(tl.step_s == Approx(2 * expect).epsilon(1e-9));
  for (size_t i = 0; i < t.ops.size(); ++i) {
    if (t.ops[i].kind == nm::OpKind::kSendActivation) {
      CHECK(tl.timing[i].end_s - tl.timing[i].start_s == Approx(expect).epsilon(1e-9));
    }
  }
  const auto busy = std::max_element(tl.links.begin(), tl.links.end(),
                                     [](auto& a, auto& b) { return a.busy_s < b.busy_s; });
  CHECK(busy->busy_s == Approx(8e6 / (100e6 * 0.957)));
  CHECK(busy->bytes == 1000000);
}

TEST_CASE("Replay: GPipe and 1F1B with free links take (M+S-1)(tf+tb)") {
  for (int S : {1, 2, 4, 8}) {
    for (int M : {1, 4, 8, 16}) {
      const double tf = 0.25, tb = 0.5;
      const double closed = (M + S - 1) * (tf + tb);
      const nm::Timeline g =
          nm::replay(uniform("gpipe", S, M, 1, 1 << 20), free_links("fixed:0.25/0.5"));
      CHECK(g.step_s == Approx(closed));
      CHECK(g.bubble_fraction == Approx(double(S - 1) / (M + S - 1)));
      // 1F1B: same time with equal tf = tb, fewer activations in flight.
      const nm::Timeline o = nm::replay(uniform("1f1b", S, M, 1, 1 << 20), free_links("fixed:0.5"));
      CHECK(o.step_s == Approx((M + S - 1) * 1.0));
      // ... and (also in this model) with unequal tf, tb.
      const nm::Timeline o2 =
          nm::replay(uniform("1f1b", S, M, 1, 1 << 20), free_links("fixed:0.25/0.5"));
      CHECK(o2.step_s == Approx(closed));
      const nm::Timeline g2 =
          nm::replay(uniform("gpipe", S, M, 1, 1 << 20), free_links("fixed:0.5"));
      for (int s = 0; s < S; ++s) {
        CHECK(g2.peak_activations[s] == M);
        CHECK(o.peak_activations[s] == std::min(S - s, M));
      }
    }
  }
}

TEST_CASE("Replay: ring all-reduce takes 2(D-1)/D bytes/bandwidth + 2(D-1) latency") {
  for (int D : {2, 3, 4, 8}) {
    const double bytes = 4e6, bw = 1e9, lat = 2e-3;
    const nm::StepTrace t = nm::build_trace("gpipe", 1, 1, D, [&](nm::TraceOp& op) {
      if (op.kind == nm::OpKind::kAllReduce) op.bytes = static_cast<uint64_t>(bytes);
    });
    const nm::Timeline tl = nm::replay(t, link(bw, lat, "fixed:0"));
    const double closed = 2.0 * (D - 1) / D * bytes * 8 / bw + 2.0 * (D - 1) * lat;
    CHECK(tl.step_s == Approx(closed).epsilon(1e-9));
  }
}

TEST_CASE("Replay: the sharded exchange sends bytes/D to and from every other replica") {
  for (int D : {2, 3, 4, 8}) {
    const double bytes = 4e6, bw = 1e9, lat = 2e-3;
    nm::StepTrace t = nm::build_trace("gpipe", 1, 1, D, [&](nm::TraceOp& op) {
      if (op.kind == nm::OpKind::kAllReduce) op.bytes = static_cast<uint64_t>(bytes);
    });
    t.sharded_exchange = true;
    // A link per pair of hosts: the D-1 shards of a phase travel side by side.
    const nm::Timeline tl = nm::replay(t, link(bw, lat, "fixed:0"));
    CHECK(tl.step_s == Approx(2.0 * (bytes / D * 8 / bw + lat)).epsilon(1e-9));
    double carried = 0;
    for (const auto& l : tl.links) carried += l.bytes;
    CHECK(carried == Approx(2.0 * D * (D - 1) * bytes / D));
    // One NIC per host: its D-1 shards share it, as much data as the ring's but
    // 2 latencies instead of 2(D-1).
    nm::NetConfig nic = link(bw, lat, "fixed:0");
    nic.nic_bandwidth_bps = bw;
    const nm::Timeline tn = nm::replay(t, nic);
    CHECK(tn.step_s == Approx(2.0 * (D - 1) / D * bytes * 8 / bw + 2 * lat).epsilon(1e-9));
  }
}

TEST_CASE("Replay: the sender keeps computing while its message is on the wire") {
  // 2 stages, 2 micro-batches, GPipe, forward 1 s; each activation takes 10 s on the wire.
  nm::NetConfig c = link(8e6, 0, "fixed:1/0");
  const nm::StepTrace t = uniform("gpipe", 2, 2, 1, 10000000);
  const nm::Timeline tl = nm::replay(t, c);
  for (size_t i = 0; i < t.ops.size(); ++i) {
    const auto& op = t.ops[i];
    if (op.kind == nm::OpKind::kForward && op.device == 0 && op.microbatch == 1) {
      CHECK(tl.timing[i].start_s == Approx(1.0));  // not after the first send's 10 s
    }
    if (op.kind == nm::OpKind::kForward && op.device == 1 && op.microbatch == 1) {
      // m1 is queued behind m0 on their connection: m0 arrives at 11, m1 at 21
      CHECK(tl.timing[i].start_s == Approx(21.0));
    }
  }
}

TEST_CASE("Replay: encode occupies the sender, decode the receiver") {
  nm::NetConfig c = free_links("measured");
  const nm::StepTrace t = nm::build_trace("gpipe", 2, 1, 1, [](nm::TraceOp& op) {
    op.compute_s = op.kind == nm::OpKind::kForward ? 1.0 : 0.0;
    if (op.kind == nm::OpKind::kSendActivation) {
      op.encode_s = 0.25;
      op.decode_s = 0.5;
    }
  });
  const nm::Timeline tl = nm::replay(t, c);
  for (size_t i = 0; i < t.ops.size(); ++i) {
    const auto& op = t.ops[i];
    if (op.kind == nm::OpKind::kSendActivation) {
      CHECK(tl.timing[i].encode_start_s == Approx(1.0));
      CHECK(tl.timing[i].encode_end_s == Approx(1.25));
      CHECK(tl.timing[i].decode_start_s == Approx(1.25));
      CHECK(tl.timing[i].decode_end_s == Approx(1.75));
    }
    if (op.kind == nm::OpKind::kForward && op.device == 1)
      CHECK(tl.timing[i].start_s == Approx(1.75));
  }
  CHECK(tl.device_busy_s[0] == Approx(1.25));
  CHECK(tl.device_busy_s[1] == Approx(1.5));
}

TEST_CASE("Replay: the same seed gives identical timelines, jitter included") {
  nm::NetConfig c = link(100e6, 5e-3, "fixed:0.01/0.02");
  c.jitter_s = 3e-3;
  const nm::StepTrace t = uniform("1f1b", 4, 8, 2, 500000);
  auto run = [&](int64_t seed) {
    nm::NetConfig cc = c;
    cc.seed = seed;
    nm::Simulator sim(cc);
    std::vector<nm::Timeline> steps;
    steps.reserve(3);
    for (int k = 0; k < 3; ++k) steps.push_back(sim.replay(t));
    return steps;
  };
  const auto a = run(42), b = run(42), other = run(43);
  auto same = [](const nm::Timeline& x, const nm::Timeline& y) {
    if (x.step_s != y.step_s || x.timing.size() != y.timing.size()) return false;
    for (size_t i = 0; i < x.timing.size(); ++i) {
      if (x.timing[i].start_s != y.timing[i].start_s || x.timing[i].end_s != y.timing[i].end_s)
        return false;
    }
    return true;
  };
  for (int k = 0; k < 3; ++k) CHECK(same(a[k], b[k]));
  {
    nm::Simulator sim(c);
    double sum = 0;
    for (int k = 0; k < 3; ++k) sum += sim.replay(t).step_s;
    CHECK(sim.elapsed_s() == sum);
    CHECK(sim.steps() == 3);
  }
  CHECK_FALSE(same(a[0], other[0]));
  CHECK_FALSE(same(a[0], a[1]));  // the stream advances across steps
  c.jitter_s = 0;
  const nm::Timeline calm = nm::replay(t, c);
  CHECK(a[0].step_s > calm.step_s);
}

TEST_CASE("Replay: shared hosts, NICs and per-link overrides") {
  const nm::StepTrace t = uniform("gpipe", 4, 1, 1, 1000000);  // 8 Mbit per message
  nm::NetConfig c = link(1e9, 0, "fixed:0");
  const double base = nm::replay(t, c).step_s;
  CHECK(base == Approx(6 * 8e-3));
  c.stages_per_host = 2;  // boundary 0-1 and 2-3 are in memory
  CHECK(nm::replay(t, c).step_s == Approx(2 * 8e-3));
  c.stages_per_host = 1;
  nm::set_links(c, "1-2:100Mbps:1ms");  // the middle boundary is slow
  CHECK(nm::replay(t, c).step_s == Approx(4 * 8e-3 + 2 * (80e-3 + 1e-3)));
  CHECK_THROWS_AS(nm::replay(t,
                             [&] {
                               auto x = c;
                               nm::set_links(x, "1-9:1Gbps");
                               return x;
                             }()),
                  slowpipe::UsageError);
}

TEST_CASE("Replay: inconsistent traces are data errors") {
  nm::StepTrace t = uniform("gpipe", 2, 2, 1, 10);
  nm::StepTrace bad_stage = t;
  bad_stage.ops[0].device = 5;
  CHECK_THROWS_AS(nm::replay(bad_stage, free_links("fixed:1")), slowpipe::DataError);
  nm::StepTrace bad_chunk = t;
  bad_chunk.ops[0].chunk = 5;
  CHECK_THROWS_WITH(nm::replay(bad_chunk, free_links("fixed:1")), Catch::Contains("chunk"));
  nm::StepTrace two_devices = t;  // chunk 0's forward on device 1
  two_devices.ops[0].device = 1;
  CHECK_THROWS_WITH(nm::replay(two_devices, free_links("fixed:1")), Catch::Contains("two devices"));
  nm::StepTrace no_peer = t;
  for (auto& op : no_peer.ops) {
    if (op.kind == nm::OpKind::kSendActivation) op.peer = 7;
  }
  CHECK_THROWS_WITH(nm::replay(no_peer, free_links("fixed:1")),
                    Catch::Contains("send to a device"));
  nm::StepTrace negative = t;
  negative.ops[1].compute_s = -1;
  CHECK_THROWS_WITH(nm::replay(negative, free_links("measured")), Catch::Contains("op 1"));
  nm::StepTrace dup = t;
  dup.ops.push_back(dup.ops[0]);
  CHECK_THROWS_AS(nm::replay(dup, free_links("fixed:1")), slowpipe::DataError);
  // Stage 1 waits for micro-batch 1 first, but stage 0 only sends it after
  // receiving the gradient of micro-batch 1: never.
  nm::StepTrace stall;
  stall.stages = 2;
  stall.chunks = 2;
  stall.microbatches = 2;
  auto op = [](nm::OpKind k, int s, int m) {
    nm::TraceOp o;
    o.kind = k;
    o.device = s;
    o.chunk = s;
    o.microbatch = m;
    if (k == nm::OpKind::kSendActivation) o.peer = s + 1;
    if (k == nm::OpKind::kSendGradient) o.peer = s - 1;
    return o;
  };
  stall.ops = {op(nm::OpKind::kForward, 0, 0),     op(nm::OpKind::kBackward, 0, 1),
               op(nm::OpKind::kForward, 0, 1),     op(nm::OpKind::kSendActivation, 0, 1),
               op(nm::OpKind::kForward, 1, 1),     op(nm::OpKind::kBackward, 1, 1),
               op(nm::OpKind::kSendGradient, 1, 1)};
  CHECK_THROWS_WITH(nm::replay(stall, free_links("fixed:1")), Catch::Contains("stalled"));
}

TEST_CASE("Chrome trace: valid JSON with one complete event per op interval") {
  const nm::StepTrace t = uniform("1f1b", 3, 4, 2, 100000);
  nm::NetConfig c = link(1e9, 1e-3, "fixed:0.01");
  const nm::Timeline tl = nm::replay(t, c);
  std::ostringstream os;
  nm::write_chrome_trace(tl, os);
  const auto doc = nlohmann::json::parse(os.str());
  size_t spans = 0, compute = 0, wire = 0;
  for (const auto& ev : doc["traceEvents"]) {
    if (ev["ph"] != "X") continue;
    ++spans;
    CHECK(ev["dur"].get<double>() >= 0);
    CHECK(ev["ts"].get<double>() + ev["dur"].get<double>() <= tl.step_s * 1e6 * (1 + 1e-9));
    compute += ev["cat"] == "compute";
    wire += ev["cat"] == "wire";
  }
  // 2 replicas x 3 stages x 4 micro-batches x (F + B) + 6 optimizers
  CHECK(compute == 2 * 3 * 4 * 2 + 6);
  // sends: 2 x 4 x (2 activation + 2 gradient) + 6 all-reduces
  CHECK(wire == 2 * 4 * 4 + 6);
  CHECK(spans == compute + wire);  // codec times are zero under fixed: no codec spans
  // Two steps end to end: twice the spans, the second step after the first.
  std::ostringstream os2;
  nm::write_chrome_trace(std::vector<nm::Timeline>{tl, tl}, os2);
  const auto doc2 = nlohmann::json::parse(os2.str());
  size_t spans2 = 0;
  double last_end_us = 0;
  for (const auto& ev : doc2["traceEvents"]) {
    if (ev["ph"] != "X") continue;
    ++spans2;
    if (ev["args"]["step"] == 1) CHECK(ev["ts"].get<double>() >= tl.step_s * 1e6 * (1 - 1e-9));
    last_end_us = std::max(last_end_us, ev["ts"].get<double>() + ev["dur"].get<double>());
  }
  CHECK(spans2 == 2 * spans);
  CHECK(last_end_us == Approx(2 * tl.step_s * 1e6));
}

TEST_CASE("Topology: NICs are shared by all flows of a host, links are not") {
  nm::NetConfig c = link(10e9, 0, "fixed:0");
  c.nic_bandwidth_bps = 1e9;
  nm::FlowNetwork net;
  nm::Topology topo(c, 3, 1, net);
  const nm::Route& a = topo.route(1, 0);
  const nm::Route& b = topo.route(1, 2);
  REQUIRE(a.length == 3);
  CHECK(a.path[0] == b.path[0]);  // nic1.out
  CHECK(a.path[1] != b.path[1]);  // two different links
  CHECK(net.resource_name(a.path[0]) == "nic1.out");
  const uint32_t fa = net.start_flow(0, a.path, a.length, 1e9);
  const uint32_t fb = net.start_flow(0, b.path, b.length, 1e9);
  CHECK(net.rate_bps(fa) == Approx(0.5e9));
  CHECK(net.rate_bps(fb) == Approx(0.5e9));
  // In a replay, the ring all-reduce then runs at the NIC's rate.
  const int D = 3;
  const double bytes = 3e6;
  const nm::StepTrace t = nm::build_trace("gpipe", 1, 1, D, [&](nm::TraceOp& op) {
    if (op.kind == nm::OpKind::kAllReduce) op.bytes = static_cast<uint64_t>(bytes);
  });
  c.latency_s = 1e-3;
  CHECK(nm::replay(t, c).step_s ==
        Approx(2.0 * (D - 1) / D * bytes * 8 / 1e9 + 2 * (D - 1) * 1e-3));
}
