// RankReport packing and merging (report.h).
#include "distributed/report.h"

#include <cmath>
#include <cstring>
#include <deque>
#include <map>
#include <tuple>
#include <type_traits>

#include "common/errors.h"

namespace slowpipe::dist {
namespace {

class Writer {
 public:
  template <class T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    out.insert(out.end(), p, p + sizeof(T));
  }
  template <class T>
  void put_vec(const std::vector<T>& v) {
    put<uint64_t>(v.size());
    for (const T& x : v) put(x);
  }
  Bytes out;
};

class Reader {
 public:
  explicit Reader(const Bytes& b) : b_(b) {}
  template <class T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    if (pos_ + sizeof(T) > b_.size()) throw DataError("dist: truncated step report");
    T v;
    std::memcpy(&v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  template <class T>
  std::vector<T> get_vec() {
    const auto n = get<uint64_t>();
    if (n > b_.size()) throw DataError("dist: corrupt step report");
    std::vector<T> v;
    for (uint64_t i = 0; i < n; ++i) v.push_back(get<T>());
    return v;
  }
  bool done() const { return pos_ == b_.size(); }

 private:
  const Bytes& b_;
  size_t pos_ = 0;
};

void add_summary(sim::ChannelSummary& into, const sim::ChannelSummary& s) {
  into.bytes += s.bytes;
  into.delta_norm += s.delta_norm;
  into.encode_s += s.encode_s;
  into.decode_s += s.decode_s;
  into.transfers += s.transfers;
}

// Sums -> means over transfers (rel_error: summed by rel_errors() in order).
void finish(std::vector<sim::ChannelSummary>& v) {
  for (auto& s : v) {
    if (s.transfers > 0) {
      s.delta_norm /= s.transfers;
      s.rel_error /= s.transfers;
    }
  }
}

bool is_send(netmodel::OpKind k) {
  return k == netmodel::OpKind::kSendActivation || k == netmodel::OpKind::kSendGradient;
}

}  // namespace

Bytes pack(const RankReport& r) {
  Writer w;
  w.put_vec(r.losses);
  w.put_vec(r.ops);
  w.put_vec(r.decodes);
  w.put_vec(r.errors);
  w.put_vec(r.fw);
  w.put_vec(r.bw);
  w.put_vec(r.fw_wire);
  w.put_vec(r.bw_wire);
  w.put(r.grad);
  w.put(r.grad_wire);
  w.put(r.channel_state_bytes);
  w.put(r.grad_norm);
  w.put(r.sharded);
  w.put_vec(r.shard_errors);
  w.put(r.server_error);
  return std::move(w.out);
}

RankReport unpack(const Bytes& bytes) {
  Reader rd(bytes);
  RankReport r;
  r.losses = rd.get_vec<double>();
  r.ops = rd.get_vec<netmodel::TraceOp>();
  r.decodes = rd.get_vec<DecodeTime>();
  r.errors = rd.get_vec<SentError>();
  r.fw = rd.get_vec<sim::ChannelSummary>();
  r.bw = rd.get_vec<sim::ChannelSummary>();
  r.fw_wire = rd.get_vec<uint64_t>();
  r.bw_wire = rd.get_vec<uint64_t>();
  r.grad = rd.get<sim::ChannelSummary>();
  r.grad_wire = rd.get<uint64_t>();
  r.channel_state_bytes = rd.get<uint64_t>();
  r.grad_norm = rd.get<double>();
  r.sharded = rd.get<bool>();
  r.shard_errors = rd.get_vec<double>();
  r.server_error = rd.get<double>();
  if (!rd.done()) throw DataError("dist: step report with trailing bytes");
  return r;
}

namespace {

using DecodeKey = std::tuple<int, int, int, int>;  // kind, sending stage, micro-batch, replica

// The channel summaries: the boundaries' summed over every rank, the
// gradient all-reduce's per stage (when there are replicas).
void merge_channels(const std::vector<RankReport>& reports, const Layout& layout,
                    sim::StepResult& out) {
  const int S = layout.stages, D = layout.replicas;
  out.fw.resize(static_cast<size_t>(S - 1));
  out.bw.resize(static_cast<size_t>(S - 1));
  out.fw_wire.assign(static_cast<size_t>(S - 1), 0);
  out.bw_wire.assign(static_cast<size_t>(S - 1), 0);
  for (const RankReport& rep : reports) {
    for (int b = 0; b + 1 < S; ++b) {
      const auto i = static_cast<size_t>(b);
      add_summary(out.fw[i], rep.fw[i]);
      add_summary(out.bw[i], rep.bw[i]);
      out.fw_wire[i] += rep.fw_wire[i];
      out.bw_wire[i] += rep.bw_wire[i];
    }
  }
  if (D > 1) {
    out.grad.resize(static_cast<size_t>(S));
    out.grad_wire.assign(static_cast<size_t>(S), 0);
    for (int rank = 0; rank < layout.world(); ++rank) {
      const auto s = static_cast<size_t>(layout.stage_of(rank));
      add_summary(out.grad[s], reports[static_cast<size_t>(rank)].grad);
      out.grad_wire[s] += reports[static_cast<size_t>(rank)].grad_wire;
    }
  }
}

// The momentum exchange's relative errors, per stage in the single-process
// order: for each server j, the other replicas' shards to it, then its
// average once per other replica.
void momentum_errors(const std::vector<RankReport>& reports, const Layout& layout,
                     sim::StepResult& out) {
  const int D = layout.replicas;
  for (int s = 0; s < layout.stages; ++s) {
    double& sum = out.grad[static_cast<size_t>(s)].rel_error;
    for (int j = 0; j < D; ++j) {
      for (int r = 0; r < D; ++r)
        if (r != j)
          sum += reports[static_cast<size_t>(layout.rank(r, s))].shard_errors.at(
              static_cast<size_t>(j));
      for (int r = 0; r + 1 < D; ++r)
        sum += reports[static_cast<size_t>(layout.rank(j, s))].server_error;
    }
  }
}

// Each message's relative error, added in the merged trace's order (the
// single-process engine's: replica by replica in the global op order, then the
// all-reduces stage by stage, replica by replica), then the means.
void rel_errors(const std::vector<RankReport>& reports, const Layout& layout,
                sim::StepResult& out) {
  std::map<DecodeKey, double> sent;
  for (int rank = 0; rank < layout.world(); ++rank)
    for (const SentError& e : reports[static_cast<size_t>(rank)].errors)
      sent[{static_cast<int>(e.kind), e.stage, e.microbatch, layout.replica_of(rank)}] =
          e.rel_error;
  const bool sharded = reports[0].sharded;
  if (sharded) momentum_errors(reports, layout, out);
  for (const netmodel::TraceOp& op : out.trace.ops) {
    if (op.kind == netmodel::OpKind::kAllReduce && sharded) continue;
    if (op.kind == netmodel::OpKind::kAllReduce) {
      const auto s = static_cast<size_t>(op.device);
      out.grad[s].rel_error +=
          reports[static_cast<size_t>(layout.rank(op.replica, op.device))].grad.rel_error;
      continue;
    }
    if (!is_send(op.kind)) continue;
    const auto it = sent.find({static_cast<int>(op.kind), op.device, op.microbatch, op.replica});
    const double e = it == sent.end() ? NAN : it->second;
    if (op.kind == netmodel::OpKind::kSendActivation)
      out.fw[static_cast<size_t>(op.device)].rel_error += e;
    else
      out.bw[static_cast<size_t>(op.device - 1)].rel_error += e;
  }
  finish(out.fw);
  finish(out.bw);
  finish(out.grad);
}

// Receivers' decode seconds, keyed by (kind, sending stage, micro-batch, replica).
std::map<DecodeKey, double> decode_seconds(const std::vector<RankReport>& reports,
                                           const Layout& layout) {
  std::map<DecodeKey, double> decode;
  for (int rank = 0; rank < layout.world(); ++rank)
    for (const DecodeTime& d : reports[static_cast<size_t>(rank)].decodes)
      decode[{static_cast<int>(d.kind), d.stage, d.microbatch, layout.replica_of(rank)}] +=
          d.seconds;
  return decode;
}

// Trace: replica by replica in the global op order, each compute op followed
// by its send; then the all-reduces (stage by stage), then the optimizer steps.
std::vector<netmodel::TraceOp> merge_trace(const std::vector<RankReport>& reports,
                                           const Layout& layout,
                                           const std::vector<netmodel::ScheduledOp>& order) {
  const int S = layout.stages, D = layout.replicas;
  const std::map<DecodeKey, double> decode = decode_seconds(reports, layout);
  std::vector<std::deque<netmodel::TraceOp>> queue(static_cast<size_t>(layout.world()));
  for (int rank = 0; rank < layout.world(); ++rank)
    for (const auto& op : reports[static_cast<size_t>(rank)].ops)
      queue[static_cast<size_t>(rank)].push_back(op);
  std::vector<netmodel::TraceOp> ops;
  for (int r = 0; r < D; ++r) {
    for (const netmodel::ScheduledOp& p : order) {
      auto& q = queue[static_cast<size_t>(layout.rank(r, p.chunk))];
      if (q.empty()) throw std::logic_error("dist: a rank reported fewer ops than its schedule");
      ops.push_back(q.front());
      q.pop_front();
      if (!q.empty() && is_send(q.front().kind)) {
        netmodel::TraceOp send = q.front();
        q.pop_front();
        const auto it = decode.find({static_cast<int>(send.kind), send.device, send.microbatch, r});
        if (it != decode.end()) send.decode_s = it->second;
        ops.push_back(send);
      }
    }
  }
  if (!reports.empty() && reports[0].sharded) {
    // The momentum exchange: stage by stage, each replica's exchange op and
    // then its optimizer step (sim/engine_momentum.cpp).
    for (int s = 0; s < S; ++s)
      for (int r = 0; r < D; ++r)
        for (auto& q = queue[static_cast<size_t>(layout.rank(r, s))]; !q.empty(); q.pop_front())
          ops.push_back(q.front());
    return ops;
  }
  for (auto kind : {netmodel::OpKind::kAllReduce, netmodel::OpKind::kOptimizer}) {
    const bool by_stage = kind == netmodel::OpKind::kAllReduce;
    for (int a = 0; a < (by_stage ? S : D); ++a)
      for (int b = 0; b < (by_stage ? D : S); ++b) {
        auto& q = queue[static_cast<size_t>(by_stage ? layout.rank(b, a) : layout.rank(a, b))];
        if (!q.empty() && q.front().kind == kind) {
          ops.push_back(q.front());
          q.pop_front();
        }
      }
  }
  return ops;
}

}  // namespace

sim::StepResult merge(const std::vector<RankReport>& reports, const Layout& layout,
                      const std::vector<netmodel::ScheduledOp>& order) {
  const int S = layout.stages, D = layout.replicas;
  sim::StepResult out;
  // The single-process engine sums losses replica by replica, micro-batch by micro-batch.
  double loss_sum = 0;
  for (int r = 0; r < D; ++r)
    for (double l : reports[static_cast<size_t>(layout.rank(r, S - 1))].losses) loss_sum += l;
  out.loss = loss_sum / D;
  out.grad_norm = reports[0].grad_norm;
  merge_channels(reports, layout, out);
  out.trace.ops = merge_trace(reports, layout, order);
  rel_errors(reports, layout, out);
  for (const auto& op : out.trace.ops) out.compute_s += op.compute_s;
  return out;
}

}  // namespace slowpipe::dist
