// distributed/report.h: a rank's report survives packing; truncated bytes are refused;
// merging the ranks' reports gives the single-process engine's loss sum order
// and trace order (each compute op followed by its send, replicas in turn,
// then all-reduces stage by stage, then optimizer steps), decode seconds
// attached to the sender's op, bytes summed per boundary, and each message's
// relative error summed in the single-process order, the momentum exchange's
// ops and errors too, and interleaved chunks (several per device) alike.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "common/errors.h"
#include "distributed/report.h"
#include "pipeline/schedule.h"

namespace sd = slowpipe::dist;
using slowpipe::netmodel::OpKind;
using slowpipe::netmodel::TraceOp;

namespace {

// Relative errors whose sum depends on the order of the additions.
double fw_error(int m, int r) {
  return 0.1 * (m + 1) + 1e-3 / (r + 3);
}
double bw_error(int m, int r) {
  return 0.7 / (m + 2) + 0.01 * r;
}

TraceOp op(OpKind kind, int stage, int mb, int replica) {
  TraceOp t;
  t.kind = kind;
  t.device = stage;
  t.chunk = stage;
  t.microbatch = mb;
  t.replica = replica;
  t.compute_s = 0.001;
  return t;
}

// What rank (r, s) of a 2-stage GPipe run with M micro-batches reports: its
// ops in its own schedule order.
sd::RankReport report(int r, int s, int M, int D) {
  sd::RankReport rep;
  rep.fw.resize(1);
  rep.bw.resize(1);
  rep.fw_wire.assign(1, 0);
  rep.bw_wire.assign(1, 0);
  const auto schedule = slowpipe::netmodel::make_schedule("gpipe", 2, M);
  for (const auto& p : schedule.per_device[static_cast<size_t>(s)]) {
    const int m = p.microbatch;
    if (p.pass == slowpipe::netmodel::Pass::kForward) {
      rep.ops.push_back(op(OpKind::kForward, s, m, r));
      if (s == 0) {
        TraceOp send = op(OpKind::kSendActivation, 0, m, r);
        send.bytes = 100;
        rep.ops.push_back(send);
        rep.fw[0].bytes += 100;
        rep.fw[0].transfers += 1;
        rep.fw_wire[0] += 164;
        rep.errors.push_back({OpKind::kSendActivation, 0, m, fw_error(m, r)});
      } else {
        rep.decodes.push_back({OpKind::kSendActivation, 0, m, 0.5 + m});
        rep.fw[0].decode_s += 0.5 + m;
      }
    } else {
      rep.ops.push_back(op(OpKind::kBackward, s, m, r));
      if (s == 1) {
        rep.ops.push_back(op(OpKind::kSendGradient, 1, m, r));
        rep.bw[0].bytes += 10;
        rep.bw[0].transfers += 1;
        rep.errors.push_back({OpKind::kSendGradient, 1, m, bw_error(m, r)});
        rep.losses.push_back(0.1 * (r + 1) + 0.01 * m);
      }
    }
  }
  if (D > 1) {
    rep.ops.push_back(op(OpKind::kAllReduce, s, -1, r));
    rep.grad.resize(1);
    rep.grad_wire.assign(1, 0);
    rep.grad[0].transfers = 1;
    rep.grad[0].rel_error = 0.3 / (r + 1) + 0.05 * s;
  }
  rep.ops.push_back(op(OpKind::kOptimizer, s, -1, r));
  rep.grad_norm = 1.5 + r;
  return rep;
}

// "kind stage micro-batch replica", readable in a failure message.
std::string key(OpKind kind, int stage, int mb, int replica) {
  return std::to_string(static_cast<int>(kind)) + " " + std::to_string(stage) + " " +
         std::to_string(mb) + " " + std::to_string(replica);
}

}  // namespace

TEST_CASE("dist: reports survive packing; damaged bytes are refused") {
  const sd::RankReport a = report(1, 1, 3, 2);
  const sd::Bytes bytes = sd::pack(a);
  const sd::RankReport b = sd::unpack(bytes);
  REQUIRE(b.losses == a.losses);
  REQUIRE(b.ops.size() == a.ops.size());
  REQUIRE(b.decodes.size() == a.decodes.size());
  REQUIRE(b.errors.size() == a.errors.size());
  REQUIRE(b.errors.back().rel_error == a.errors.back().rel_error);
  REQUIRE(b.grad.at(0).rel_error == a.grad.at(0).rel_error);
  REQUIRE(b.fw_wire == a.fw_wire);
  REQUIRE(b.grad_norm == a.grad_norm);
  sd::Bytes cut(bytes.begin(), bytes.end() - 3);
  REQUIRE_THROWS_AS(sd::unpack(cut), slowpipe::DataError);
  sd::Bytes longer = bytes;
  longer.push_back(0);
  REQUIRE_THROWS_AS(sd::unpack(longer), slowpipe::DataError);
}

TEST_CASE("dist: merged reports are in the single-process order") {
  const int S = 2, D = 2, M = 2;
  const sd::Layout layout{S, D};
  REQUIRE(layout.rank(1, 0) == 2);
  REQUIRE(layout.replica_of(3) == 1);
  REQUIRE(layout.stage_of(3) == 1);
  REQUIRE(layout.name(3) == "rank 3 (replica 1, stage 1)");
  std::vector<sd::RankReport> reports;
  reports.reserve(static_cast<size_t>(layout.world()));
  for (int rank = 0; rank < layout.world(); ++rank)
    reports.push_back(report(layout.replica_of(rank), layout.stage_of(rank), M, D));
  const auto order =
      slowpipe::netmodel::single_process_order(slowpipe::netmodel::make_schedule("gpipe", S, M));
  const slowpipe::sim::StepResult res = sd::merge(reports, layout, order);

  // Losses: replica 0's in its last stage's order, then replica 1's.
  double sum = 0;
  for (int r = 0; r < D; ++r)
    for (double l : reports[static_cast<size_t>(layout.rank(r, S - 1))].losses) sum += l;
  REQUIRE(res.loss == sum / D);
  REQUIRE(res.loss != 0);
  REQUIRE(res.grad_norm == 1.5);  // replica 0's

  std::vector<std::string> got;
  for (const auto& o : res.trace.ops) got.push_back(key(o.kind, o.device, o.microbatch, o.replica));
  std::vector<std::string> expect;
  for (int r = 0; r < D; ++r) {
    for (const auto& p : order) {
      const bool backward = p.pass != slowpipe::netmodel::Pass::kForward;
      expect.push_back(
          key(backward ? OpKind::kBackward : OpKind::kForward, p.chunk, p.microbatch, r));
      if (!backward && p.chunk == 0)
        expect.push_back(key(OpKind::kSendActivation, 0, p.microbatch, r));
      if (backward && p.chunk == 1)
        expect.push_back(key(OpKind::kSendGradient, 1, p.microbatch, r));
    }
  }
  for (int s = 0; s < S; ++s)
    for (int r = 0; r < D; ++r) expect.push_back(key(OpKind::kAllReduce, s, -1, r));
  for (int r = 0; r < D; ++r)
    for (int s = 0; s < S; ++s) expect.push_back(key(OpKind::kOptimizer, s, -1, r));
  REQUIRE(got == expect);

  // Decode seconds reach the sender's op; bytes and transfers add up.
  for (const auto& o : res.trace.ops)
    if (o.kind == OpKind::kSendActivation) REQUIRE(o.decode_s == 0.5 + o.microbatch);
  REQUIRE(res.fw[0].bytes == 100 * M * D);
  REQUIRE(res.fw[0].decode_s == D * (0.5 + 1.5));
  REQUIRE(res.fw_wire[0] == 164u * M * D);
  REQUIRE(res.bw[0].bytes == 10 * M * D);

  // Relative errors: each message's, added replica by replica in the global
  // op order (the gradient exchange's stage by stage, replica by replica),
  // then divided by the transfers.
  double fw = 0, bw = 0;
  for (int r = 0; r < D; ++r)
    for (const auto& p : order) {
      if (p.pass == slowpipe::netmodel::Pass::kForward && p.chunk == 0)
        fw += fw_error(p.microbatch, r);
      if (p.pass != slowpipe::netmodel::Pass::kForward && p.chunk == 1)
        bw += bw_error(p.microbatch, r);
    }
  REQUIRE(res.fw[0].rel_error == fw / (M * D));
  REQUIRE(res.bw[0].rel_error == bw / (M * D));
  for (int s = 0; s < S; ++s) {
    double g = 0;
    for (int r = 0; r < D; ++r)
      g += reports[static_cast<size_t>(layout.rank(r, s))].grad[0].rel_error;
    REQUIRE(res.grad[static_cast<size_t>(s)].rel_error == g / D);
  }
  // A message without a measured error (a topk:shared backward) makes its mean NaN.
  reports[3].errors.pop_back();
  REQUIRE(std::isnan(sd::merge(reports, layout, order).bw[0].rel_error));
  REQUIRE(!std::isnan(sd::merge(reports, layout, order).fw[0].rel_error));
  REQUIRE(res.compute_s == Approx(0.001 * res.trace.ops.size()));
}

TEST_CASE("dist: a momentum exchange step merges in the single-process order") {
  const int S = 2, D = 3, M = 1;
  const sd::Layout layout{S, D};
  std::vector<sd::RankReport> reports;
  for (int rank = 0; rank < layout.world(); ++rank) {
    const int r = layout.replica_of(rank), s = layout.stage_of(rank);
    sd::RankReport rep = report(r, s, M, D);
    rep.sharded = true;
    // The exchange op, then the optimizer step (report() put the all-reduce
    // before the optimizer already); errors that depend on the summing order.
    rep.grad[0].transfers = 2 * (D - 1);
    for (int j = 0; j < D; ++j) rep.shard_errors.push_back(j == r ? NAN : 0.1 / (j + 1) + 0.01 * r);
    rep.server_errors.push_back(0.3 / (r + 2) + 0.02 * s);
    reports.push_back(rep);
  }
  const auto order =
      slowpipe::netmodel::single_process_order(slowpipe::netmodel::make_schedule("gpipe", S, M));
  const slowpipe::sim::StepResult res = sd::merge(reports, layout, order);
  // After the pipeline ops: stage by stage, each replica's exchange then its step.
  std::vector<std::string> tail;
  for (size_t i = res.trace.ops.size() - 2 * S * D; i < res.trace.ops.size(); ++i) {
    const auto& o = res.trace.ops[i];
    tail.push_back(key(o.kind, o.device, o.microbatch, o.replica));
  }
  std::vector<std::string> expect;
  for (int s = 0; s < S; ++s)
    for (int r = 0; r < D; ++r) {
      expect.push_back(key(OpKind::kAllReduce, s, -1, r));
      expect.push_back(key(OpKind::kOptimizer, s, -1, r));
    }
  REQUIRE(tail == expect);
  // Per stage: for each server j, the others' shards to it, then its average
  // once per other replica; the mean over the 2 D (D - 1) transfers.
  for (int s = 0; s < S; ++s) {
    double sum = 0;
    for (int j = 0; j < D; ++j) {
      for (int r = 0; r < D; ++r)
        if (r != j) sum += reports[static_cast<size_t>(layout.rank(r, s))].shard_errors[j];
      for (int r = 0; r + 1 < D; ++r)
        sum += reports[static_cast<size_t>(layout.rank(j, s))].server_errors[0];
    }
    REQUIRE(res.grad[static_cast<size_t>(s)].rel_error == sum / (2 * D * (D - 1)));
  }
  const sd::RankReport back = sd::unpack(sd::pack(reports[4]));
  REQUIRE(back.sharded);
  REQUIRE(back.shard_errors.size() == static_cast<size_t>(D));
  REQUIRE(back.server_errors == reports[4].server_errors);
}

TEST_CASE("dist: interleaved chunks merge in the single-process order") {
  const int S = 2, V = 2, M = 2, D = 1;
  const auto schedule = slowpipe::netmodel::make_schedule("interleaved", S, M, V);
  const int C = schedule.chunks;
  REQUIRE(C == S * V);
  const sd::Layout layout{S, D};
  // Each device reports its chunks' ops in its own order, a send after every
  // forward but the last chunk's and after every backward but chunk 0's.
  std::vector<sd::RankReport> reports(static_cast<size_t>(S));
  for (int d = 0; d < S; ++d) {
    sd::RankReport& rep = reports[static_cast<size_t>(d)];
    rep.fw.resize(static_cast<size_t>(C - 1));
    rep.bw.resize(static_cast<size_t>(C - 1));
    rep.fw_wire.assign(static_cast<size_t>(C - 1), 0);
    rep.bw_wire.assign(static_cast<size_t>(C - 1), 0);
    for (const auto& p : schedule.per_device[static_cast<size_t>(d)]) {
      const int c = p.chunk, m = p.microbatch;
      const bool fwd = p.pass == slowpipe::netmodel::Pass::kForward;
      TraceOp o = op(fwd ? OpKind::kForward : OpKind::kBackward, d, m, 0);
      o.chunk = c;
      rep.ops.push_back(o);
      if (fwd && c + 1 < C) {
        TraceOp send = op(OpKind::kSendActivation, d, m, 0);
        send.chunk = c;
        rep.ops.push_back(send);
        rep.fw[static_cast<size_t>(c)].bytes += 100 + c;
        rep.fw[static_cast<size_t>(c)].transfers += 1;
        rep.errors.push_back({OpKind::kSendActivation, c, m, fw_error(m, c)});
      }
      if (!fwd && c > 0) {
        TraceOp send = op(OpKind::kSendGradient, d, m, 0);
        send.chunk = c;
        rep.ops.push_back(send);
        rep.errors.push_back({OpKind::kSendGradient, c, m, bw_error(m, c)});
        rep.bw[static_cast<size_t>(c - 1)].transfers += 1;
      }
      if (!fwd && c == C - 1) rep.losses.push_back(0.25 + m);
    }
    for (int c = d; c < C; c += S) {
      TraceOp o = op(OpKind::kOptimizer, d, -1, 0);
      o.chunk = c;
      rep.ops.push_back(o);
    }
  }
  const auto order = slowpipe::netmodel::single_process_order(schedule);
  const slowpipe::sim::StepResult res = sd::merge(reports, layout, order, schedule.device_of);
  std::vector<std::string> got, expect;
  for (const auto& o : res.trace.ops) got.push_back(key(o.kind, o.chunk, o.microbatch, o.replica));
  for (const auto& p : order) {
    const bool fwd = p.pass == slowpipe::netmodel::Pass::kForward;
    expect.push_back(key(fwd ? OpKind::kForward : OpKind::kBackward, p.chunk, p.microbatch, 0));
    if (fwd && p.chunk + 1 < C)
      expect.push_back(key(OpKind::kSendActivation, p.chunk, p.microbatch, 0));
    if (!fwd && p.chunk > 0) expect.push_back(key(OpKind::kSendGradient, p.chunk, p.microbatch, 0));
  }
  for (int c = 0; c < C; ++c) expect.push_back(key(OpKind::kOptimizer, c, -1, 0));
  REQUIRE(got == expect);
  // Losses from the device of the last chunk; bytes and errors per boundary.
  REQUIRE(res.loss == 0.25 + 1.25);
  REQUIRE(res.fw.size() == static_cast<size_t>(C - 1));
  for (int b = 0; b + 1 < C; ++b) {
    REQUIRE(res.fw[static_cast<size_t>(b)].bytes == static_cast<uint64_t>(M * (100 + b)));
    double fw = 0, bw = 0;
    for (const auto& p : order) {
      if (p.pass == slowpipe::netmodel::Pass::kForward && p.chunk == b)
        fw += fw_error(p.microbatch, b);
      if (p.pass != slowpipe::netmodel::Pass::kForward && p.chunk == b + 1)
        bw += bw_error(p.microbatch, b + 1);
    }
    REQUIRE(res.fw[static_cast<size_t>(b)].rel_error == fw / M);
    REQUIRE(res.bw[static_cast<size_t>(b)].rel_error == bw / M);
  }
}
