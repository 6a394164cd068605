// Schedules: every pass exactly once per chunk and micro-batch on the chunk's
// device, forward before backward, the in-flight bounds each schedule
// promises, the bubble fractions of the published closed forms when every op
// takes the same time, and registry errors.
#include <algorithm>
#include <catch2/catch.hpp>

#include "common/errors.h"
#include "netmodel/replay.h"
#include "pipeline/schedule.h"
#include "netmodel/schedule_trace.h"

namespace nm = slowpipe::netmodel;

namespace {

// Largest number of micro-batches whose forward ran and whose activations are
// not yet freed (by the whole backward, or by the weight pass of a split one).
int max_in_flight(const std::vector<nm::ScheduledOp>& order) {
  int now = 0, peak = 0;
  for (const auto& op : order) {
    if (op.pass == nm::Pass::kForward) ++now;
    if (op.pass == nm::Pass::kBackward || op.pass == nm::Pass::kBackwardWeight) --now;
    peak = std::max(peak, now);
  }
  return peak;
}

// The sizes a schedule accepts (interleaved: M a multiple of S).
bool accepts(const nm::ScheduleEntry& e, int S, int M, int v) {
  if (v > 1 && !e.virtual_stages) return false;
  return e.name != "interleaved" || v == 1 || M % S == 0;
}

}  // namespace

TEST_CASE("Schedules: every pass once, on its chunk's device, runnable in one process") {
  for (const auto& entry : nm::schedule_registry()) {
    for (int S : {1, 2, 3, 4, 8}) {
      for (int M : {1, 3, 4, 8, 32}) {
        for (int v : {1, 2, 3}) {
          if (!accepts(entry, S, M, v)) continue;
          CAPTURE(entry.name, S, M, v);
          const nm::Schedule s = nm::make_schedule(entry.name, S, M, v);
          REQUIRE(s.devices == S);
          REQUIRE(s.chunks == S * v);
          size_t ops = 0;
          for (int d = 0; d < S; ++d) {
            ops += s.per_device[d].size();
            for (const auto& op : s.per_device[d]) REQUIRE(s.device_of[op.chunk] == d);
          }
          REQUIRE(ops == static_cast<size_t>(S * v * M * (s.split_backward ? 3 : 2)));
          // The single-process executor finds an order that respects every
          // dependency (it throws on a deadlock).
          const auto order = nm::single_process_order(s);
          REQUIRE(order.size() == ops);
        }
      }
    }
  }
}

TEST_CASE("Schedules: activations in flight") {
  for (int S : {1, 2, 4, 8}) {
    for (int M : {1, 3, 8, 32}) {
      CAPTURE(S, M);
      const auto gpipe = nm::make_schedule("gpipe", S, M);
      const auto one = nm::make_schedule("1f1b", S, M);
      const auto zb = nm::make_schedule("zb-h1", S, M);
      for (int d = 0; d < S; ++d) {
        CHECK(max_in_flight(gpipe.per_device[d]) == M);
        CHECK(max_in_flight(one.per_device[d]) == std::min(S - d, M));
        // ZB-H1 keeps 1F1B's peak (stage 0's S) on every stage.
        CHECK(max_in_flight(zb.per_device[d]) <= std::min(S, M));
      }
      // Interleaved with one chunk per stage is 1F1B, op for op.
      CHECK(nm::make_schedule("interleaved", S, M, 1).per_device == one.per_device);
    }
  }
}

TEST_CASE("Schedules: interleaved chunks go round-robin over the devices") {
  const auto s = nm::make_schedule("interleaved", 4, 8, 2);
  REQUIRE(s.device_of == std::vector<int32_t>{0, 1, 2, 3, 0, 1, 2, 3});
  // Device 0 starts with chunk 0 for micro-batches 0..3, then chunk 4 for the same ones.
  const std::vector<nm::ScheduledOp> head(s.per_device[0].begin(), s.per_device[0].begin() + 8);
  const std::vector<nm::ScheduledOp> want = {
      {nm::Pass::kForward, 0, 0}, {nm::Pass::kForward, 0, 1}, {nm::Pass::kForward, 0, 2},
      {nm::Pass::kForward, 0, 3}, {nm::Pass::kForward, 4, 0}, {nm::Pass::kForward, 4, 1},
      {nm::Pass::kForward, 4, 2}, {nm::Pass::kForward, 4, 3}};
  CHECK(head == want);
}

TEST_CASE("Schedules: bubble fractions equal the published closed forms with equal op times") {
  nm::NetConfig net;
  net.preset = "none";  // no network time: the bubble is the schedule's own
  net.compute = nm::parse_compute_spec("measured");
  for (int S : {2, 3, 4, 8}) {
    for (int k : {1, 2, 4}) {
      const int M = k * S;
      CAPTURE(S, M);
      // GPipe and 1F1B: (S-1)/(M+S-1), forward 1 s, backward 2 s.
      for (const char* name : {"gpipe", "1f1b"}) {
        const auto t = nm::replay(nm::build_trace(name, S, M, 1,
                                                  [](nm::TraceOp& op) {
                                                    if (op.kind == nm::OpKind::kForward)
                                                      op.compute_s = 1;
                                                    if (op.kind == nm::OpKind::kBackward)
                                                      op.compute_s = 2;
                                                  }),
                                  net);
        CHECK(t.bubble_fraction == Approx((S - 1.0) / (M + S - 1.0)).epsilon(1e-9));
      }
      // Interleaved 1F1B with v chunks of 1/v the work: (S-1)/(v*M+S-1).
      for (int v : {2, 3, 4}) {
        const auto t = nm::replay(nm::build_trace(
                                      "interleaved", S, M, 1,
                                      [v](nm::TraceOp& op) {
                                        if (op.kind == nm::OpKind::kForward) op.compute_s = 1.0 / v;
                                        if (op.kind == nm::OpKind::kBackward)
                                          op.compute_s = 2.0 / v;
                                      },
                                      v),
                                  net);
        CAPTURE(v);
        CHECK(t.bubble_fraction == Approx((S - 1.0) / (v * M + S - 1.0)).epsilon(1e-9));
      }
      // ZB-H1 with F = B = W: (S-1)/(3M+S-1), a third of 1F1B's bubble time.
      const auto zb = nm::replay(nm::build_trace("zb-h1", S, M, 1,
                                                 [](nm::TraceOp& op) {
                                                   if (op.kind == nm::OpKind::kForward ||
                                                       op.kind == nm::OpKind::kBackwardInput ||
                                                       op.kind == nm::OpKind::kBackwardWeight)
                                                     op.compute_s = 1;
                                                 }),
                                 net);
      CHECK(zb.bubble_fraction == Approx((S - 1.0) / (3.0 * M + S - 1.0)).epsilon(1e-9));
      CHECK(zb.step_s == Approx(3.0 * M + S - 1.0));
    }
  }
}

TEST_CASE("Schedules: a chunk boundary on one device costs no network, one between devices does") {
  nm::NetConfig slow;
  slow.preset = "1Gbps";
  slow.compute = nm::parse_compute_spec("measured");
  const auto fill = [](nm::TraceOp& op) {
    if (op.kind == nm::OpKind::kForward) op.compute_s = 1e-3;
    if (op.kind == nm::OpKind::kBackward) op.compute_s = 2e-3;
    op.bytes = 1000000;  // 8 ms at 1 Gbit/s
  };
  // One device holding two chunks: no message at all, the step is pure compute.
  const auto local = nm::build_trace("interleaved", 1, 2, 1, fill, 2);
  for (const auto& op : local.ops) {
    CHECK(op.kind != nm::OpKind::kSendActivation);
    CHECK(op.kind != nm::OpKind::kSendGradient);
  }
  const auto t1 = nm::replay(local, slow);
  CHECK(t1.step_s == Approx(2 * 2 * (1e-3 + 2e-3)));
  for (const auto& l : t1.links) CHECK(l.bytes == 0);
  // Two devices, two chunks each: chunks 0-1, 1-2 and 2-3 all cross a device
  // boundary (1 -> 2 crosses back from device 1 to device 0).
  const auto split = nm::build_trace("interleaved", 2, 2, 1, fill, 2);
  int sends = 0;
  for (const auto& op : split.ops) {
    if (op.kind == nm::OpKind::kSendActivation || op.kind == nm::OpKind::kSendGradient) {
      ++sends;
      CHECK(op.peer != op.device);
      CHECK(op.peer ==
            (op.kind == nm::OpKind::kSendActivation ? (op.chunk + 1) % 2 : (op.chunk - 1) % 2));
    }
  }
  CHECK(sends == 2 * 3 * 2);  // both directions, 3 boundaries, 2 micro-batches
  const auto t2 = nm::replay(split, slow);
  double carried = 0;
  for (const auto& l : t2.links) carried += l.bytes;
  CHECK(carried == Approx(sends * (1000000.0 + slow.overhead_bytes)));
  CHECK(t2.step_s > 3 * 8e-3);  // at least the three forward hops of one micro-batch
}

TEST_CASE("Schedules: unknown names and bad sizes are usage errors") {
  CHECK_THROWS_AS(nm::make_schedule("zigzag", 2, 2), slowpipe::UsageError);
  CHECK_THROWS_WITH(nm::make_schedule("zigzag", 2, 2), Catch::Contains("gpipe"));
  CHECK_THROWS_WITH(nm::make_schedule("zigzag", 2, 2), Catch::Contains("zb-h1"));
  CHECK_THROWS_AS(nm::make_schedule("gpipe", 0, 2), slowpipe::UsageError);
  CHECK_THROWS_WITH(nm::make_schedule("1f1b", 2, 4, 2), Catch::Contains("interleaved"));
  CHECK_THROWS_WITH(nm::make_schedule("interleaved", 4, 6, 2), Catch::Contains("multiple"));
}

TEST_CASE("Schedules: the registry refuses duplicates and takes new schedules") {
  CHECK_THROWS_AS(
      nm::register_schedule({"gpipe", "again", nm::schedule_registry().entries()[0].make}),
      std::logic_error);
  CHECK_THROWS_AS(nm::register_schedule({"", "no name", nm::schedule_registry().entries()[0].make}),
                  std::logic_error);
  // A broken schedule (a backward before its forward) is caught by make_schedule.
  nm::register_schedule({"test-backwards-first", "B before F", [](const nm::ScheduleRequest& r) {
                           nm::Schedule s = nm::empty_schedule(r, false);
                           for (int d = 0; d < r.devices; ++d) {
                             for (int m = 0; m < r.microbatches; ++m) {
                               s.per_device[d].push_back({nm::Pass::kBackward, d, m});
                               s.per_device[d].push_back({nm::Pass::kForward, d, m});
                             }
                           }
                           return s;
                         }});
  CHECK_THROWS_WITH(nm::make_schedule("test-backwards-first", 2, 2),
                    Catch::Contains("backward before its forward"));
}
