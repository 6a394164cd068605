// The shared-inbound link model (net.link_model = shared-inbound, the
// Protocol NanoGPT meter; replay_inbound.h) against timelines computed by
// hand: a two-stage GPipe (messages of one direction queueing on the wire,
// latency serialized) and a three-stage 1F1B whose middle host receives
// activations and gradients on one wire, billed in its consumption order.
// The default full-duplex model replays the same GPipe trace to its own
// closed form (the control: the two models differ). The protocol-nanogpt
// presets' records: tests/whatif/test_protocol_nanogpt.cpp.
#include <catch2/catch.hpp>

#include "common/errors.h"
#include "common/options.h"
#include "netmodel/replay.h"
#include "netmodel/schedule_trace.h"

namespace nm = slowpipe::netmodel;

namespace {

// 8e6 bit/s and 0.5 s latency: a 0.5 MB message holds a wire 0.5 s + 0.5 s.
nm::NetConfig meter(const std::string& compute) {
  nm::NetConfig c;
  c.preset = "1Gbps";
  c.bandwidth_bps = 8e6;
  c.latency_s = 0.5;
  c.efficiency = 0.9;  // not applied by the meter
  c.compute = nm::parse_compute_spec(compute);
  c.link_model = nm::kSharedInbound;
  return c;
}

nm::StepTrace uniform(const std::string& schedule, int S, int M, uint64_t bytes) {
  return nm::build_trace(schedule, S, M, 1, [&](nm::TraceOp& op) { op.bytes = bytes; });
}

// The send of `kind` from device `from` for micro-batch m.
size_t send_op(const nm::StepTrace& t, nm::OpKind kind, int from, int m) {
  for (size_t i = 0; i < t.ops.size(); ++i) {
    const nm::TraceOp& op = t.ops[i];
    if (op.kind == kind && op.device == from && op.microbatch == m) return i;
  }
  FAIL("no such send");
  return 0;
}

double wire_busy_s(const nm::Timeline& t, const std::string& name) {
  for (const auto& l : t.links) {
    if (l.name == name) return l.busy_s;
  }
  FAIL("no link " + name);
  return 0;
}

}  // namespace

TEST_CASE("Link model: two-stage GPipe on one inbound wire per host, latency serialized") {
  // fixed 0.25 s forward, 0.5 s backward; every message holds its wire
  // 1 MB / 8 Mbit/s + 0.5 s = 1.5 s.
  // dev0: F0 [0, .25] F1 [.25, .5]; a0 ready .25, a1 ready .5.
  // wire of host 1: a0 [.25, 1.75], a1 [1.75, 3.25] (latency not pipelined).
  // dev1: F0 [1.75, 2] F1 [3.25, 3.5] B1 [3.5, 4] B0 [4, 4.5]; grads ready 4, 4.5.
  // wire of host 0: g1 [4, 5.5], g0 [5.5, 7]; dev0: B1 [5.5, 6] B0 [7, 7.5].
  nm::NetConfig c = meter("fixed:0.25/0.5");
  c.latency_s = 0.5;
  const nm::StepTrace t = uniform("gpipe", 2, 2, 1000000);
  const nm::Timeline tl = nm::replay(t, c);
  CHECK(tl.step_s == Approx(7.5));
  const size_t a1 = send_op(t, nm::OpKind::kSendActivation, 0, 1);
  CHECK(tl.timing[a1].start_s == Approx(1.75));
  CHECK(tl.timing[a1].end_s == Approx(3.25));
  CHECK(wire_busy_s(tl, "wire->1") == Approx(3.0));
  CHECK(wire_busy_s(tl, "wire->0") == Approx(3.0));
  // The default model on the same trace: one connection per direction, the
  // second message leaves after the first's last bit, latency pipelined:
  // a1 [1.25, 2.75]; dev1 F1 [2.75, 3] B1 [3, 3.5] B0 [3.5, 4]; g1 arrives
  // 5, g0 leaves 4.5 and arrives 6; dev0 B0 [6, 6.5].
  nm::NetConfig duplex = c;
  duplex.link_model.clear();
  duplex.efficiency = 1.0;
  CHECK(nm::replay(t, duplex).step_s == Approx(6.5));
}

TEST_CASE("Link model: 1F1B, activations and gradients contend for the middle host's wire") {
  // S = 3, M = 3, fixed 0.1 s forward, 0.2 s backward, every message 1.0 s
  // on its wire. Orders: dev0 F0 F1 F2 B0 B1 B2; dev1 F0 F1 B0 F2 B1 B2;
  // dev2 F0 B0 F1 B1 F2 B2. Wire of host 1 in dev1's order:
  //   a0 [.1, 1.1]  a1 [1.1, 2.1]  g0 [2.5, 3.5]  a2 [3.5, 4.5] (ready at .3,
  //   but billed after g0, which dev1 consumes first)  g1 [4.5, 5.5] (ready
  //   3.5, waits for a2)  g2 [5.9, 6.9].
  // dev1: F0 [1.1,1.2] F1 [2.1,2.2] B0 [3.5,3.7] F2 [4.5,4.6] B1 [5.5,5.7] B2 [6.9,7.1].
  // Host 2: a0 [1.2, 2.2] a1 [2.2, 3.2] a2 [4.6, 5.6]; dev2 B2 ends 5.9.
  // Host 0: g0 [3.7, 4.7] g1 [5.7, 6.7] g2 [7.1, 8.1]; dev0 B2 [8.1, 8.3].
  const nm::NetConfig c = meter("fixed:0.1/0.2");
  const nm::StepTrace t = uniform("1f1b", 3, 3, 500000);
  const nm::Timeline tl = nm::replay(t, c);
  CHECK(tl.step_s == Approx(8.3));
  const size_t a2 = send_op(t, nm::OpKind::kSendActivation, 0, 2);
  CHECK(tl.timing[a2].start_s == Approx(3.5));
  CHECK(tl.timing[a2].end_s == Approx(4.5));
  const size_t g1 = send_op(t, nm::OpKind::kSendGradient, 2, 1);
  CHECK(tl.timing[g1].start_s == Approx(4.5));
  CHECK(tl.timing[g1].end_s == Approx(5.5));
  const size_t g2 = send_op(t, nm::OpKind::kSendGradient, 1, 2);
  CHECK(tl.timing[g2].end_s == Approx(8.1));
  CHECK(wire_busy_s(tl, "wire->1") == Approx(6.0));
  CHECK(wire_busy_s(tl, "wire->2") == Approx(3.0));
  CHECK(wire_busy_s(tl, "wire->0") == Approx(3.0));
}

TEST_CASE("Link model: stages on one host exchange for free; collectives are refused") {
  nm::NetConfig c = meter("fixed:0.25/0.5");
  c.stages_per_host = 2;
  CHECK(nm::replay(uniform("gpipe", 2, 2, 1000000), c).step_s == Approx((2 + 2 - 1) * 0.75));
  const nm::StepTrace two_replicas = nm::build_trace("gpipe", 2, 2, 2, [](nm::TraceOp& op) {
    op.bytes = op.kind == nm::OpKind::kAllReduce ? 8 : 1;
  });
  CHECK_THROWS_AS(nm::replay(two_replicas, meter("fixed:0.25/0.5")), slowpipe::UsageError);
}

TEST_CASE("Link model: replicas without collectives replay in full, each on its own wires") {
  // Two replicas of the two-stage GPipe above, no all-reduce: each replica's
  // hosts have their own wires, so the step is the one replica's 7.5 s.
  nm::StepTrace t = nm::build_trace("gpipe", 2, 2, 2, [](nm::TraceOp& op) { op.bytes = 1000000; });
  std::vector<nm::TraceOp> ops;
  for (const auto& op : t.ops) {
    if (op.kind != nm::OpKind::kAllReduce) ops.push_back(op);
  }
  t.ops = ops;
  nm::Simulator sim(meter("fixed:0.25/0.5"));
  const nm::Timeline tl = sim.replay(t);
  CHECK_FALSE(sim.folded());
  CHECK(tl.step_s == Approx(7.5));
  for (const char* wire : {"wire->0", "wire->1", "wire->2", "wire->3"}) {
    CHECK(wire_busy_s(tl, wire) == Approx(3.0));
  }
}

TEST_CASE("Link model: net.link_model accepts the two models by name") {
  nm::NetConfig c;
  slowpipe::OptionSet o;
  nm::describe_options(c, o);
  CHECK(o.get("net.link_model") == "full-duplex");
  CHECK_FALSE(nm::shared_inbound(c));
  o.set("net.link_model", "shared-inbound");
  CHECK(nm::shared_inbound(c));
  CHECK(nm::describe(c).find("shared-inbound") != std::string::npos);
  CHECK_THROWS_AS(o.set("net.link_model", "half-duplex"), slowpipe::UsageError);
}
