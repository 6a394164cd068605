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
  w.put_vec(r.grad);
  w.put_vec(r.grad_wire);
  w.put(r.channel_state_bytes);
  w.put(r.grad_norm);
  w.put(r.sharded);
  w.put_vec(r.shard_errors);
  w.put_vec(r.server_errors);
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
  r.grad = rd.get_vec<sim::ChannelSummary>();
  r.grad_wire = rd.get_vec<uint64_t>();
  r.channel_state_bytes = rd.get<uint64_t>();
  r.grad_norm = rd.get<double>();
  r.sharded = rd.get<bool>();
  r.shard_errors = rd.get_vec<double>();
  r.server_errors = rd.get_vec<double>();
  if (!rd.done()) throw DataError("dist: step report with trailing bytes");
  return r;
}

namespace {

using DecodeKey = std::tuple<int, int, int, int>;  // kind, sending chunk, micro-batch, replica

// Where each chunk lives: its device, and its index among that device's
// chunks (the order of a rank's per-chunk report fields).
struct Chunks {
  std::vector<int32_t> device_of;
  std::vector<size_t> local;
  Chunks(std::vector<int32_t> d, int stages) : device_of(std::move(d)) {
    if (device_of.empty())
      for (int c = 0; c < stages; ++c) device_of.push_back(c);
    std::map<int32_t, size_t> seen;
    for (int32_t dev : device_of) local.push_back(seen[dev]++);
  }
  int count() const { return static_cast<int>(device_of.size()); }
  int rank(const Layout& layout, int replica, int chunk) const {
    return layout.rank(replica, device_of[static_cast<size_t>(chunk)]);
  }
};

// The channel summaries: the boundaries' summed over every rank, the
// gradient exchange's per chunk (when there are replicas).
void merge_channels(const std::vector<RankReport>& reports, const Layout& layout,
                    const Chunks& chunks, sim::StepResult& out) {
  const int C = chunks.count(), D = layout.replicas;
  const auto B = static_cast<size_t>(C - 1);
  out.fw.resize(B);
  out.bw.resize(B);
  out.fw_wire.assign(B, 0);
  out.bw_wire.assign(B, 0);
  for (const RankReport& rep : reports) {
    for (size_t i = 0; i < B; ++i) {
      add_summary(out.fw[i], rep.fw[i]);
      add_summary(out.bw[i], rep.bw[i]);
      out.fw_wire[i] += rep.fw_wire[i];
      out.bw_wire[i] += rep.bw_wire[i];
    }
  }
  if (D > 1) {
    out.grad.resize(static_cast<size_t>(C));
    out.grad_wire.assign(static_cast<size_t>(C), 0);
    for (int c = 0; c < C; ++c)
      for (int r = 0; r < D; ++r) {
        const RankReport& rep = reports[static_cast<size_t>(chunks.rank(layout, r, c))];
        const size_t k = chunks.local[static_cast<size_t>(c)];
        add_summary(out.grad[static_cast<size_t>(c)], rep.grad.at(k));
        out.grad_wire[static_cast<size_t>(c)] += rep.grad_wire.at(k);
      }
  }
}

// The momentum exchange's relative errors, per chunk in the single-process
// order: for each server j, the other replicas' shards to it, then its
// average once per other replica.
void momentum_errors(const std::vector<RankReport>& reports, const Layout& layout,
                     const Chunks& chunks, sim::StepResult& out) {
  const int D = layout.replicas;
  for (int c = 0; c < chunks.count(); ++c) {
    const size_t k = chunks.local[static_cast<size_t>(c)];
    const auto at = [&](int r) -> const RankReport& {
      return reports[static_cast<size_t>(chunks.rank(layout, r, c))];
    };
    double& sum = out.grad[static_cast<size_t>(c)].rel_error;
    for (int j = 0; j < D; ++j) {
      for (int r = 0; r < D; ++r)
        if (r != j)
          sum += at(r).shard_errors.at(k * static_cast<size_t>(D) + static_cast<size_t>(j));
      for (int r = 0; r + 1 < D; ++r) sum += at(j).server_errors.at(k);
    }
  }
}

// Each message's relative error, added in the merged trace's order (the
// single-process engine's: replica by replica in the global op order, then the
// exchanges chunk by chunk, replica by replica), then the means.
void rel_errors(const std::vector<RankReport>& reports, const Layout& layout, const Chunks& chunks,
                sim::StepResult& out) {
  std::map<DecodeKey, double> sent;
  for (int rank = 0; rank < layout.world(); ++rank)
    for (const SentError& e : reports[static_cast<size_t>(rank)].errors)
      sent[{static_cast<int>(e.kind), e.stage, e.microbatch, layout.replica_of(rank)}] =
          e.rel_error;
  const bool sharded = reports[0].sharded;
  if (sharded) momentum_errors(reports, layout, chunks, out);
  for (const netmodel::TraceOp& op : out.trace.ops) {
    if (op.kind == netmodel::OpKind::kAllReduce && sharded) continue;
    if (op.kind == netmodel::OpKind::kAllReduce) {
      const RankReport& rep =
          reports[static_cast<size_t>(chunks.rank(layout, op.replica, op.chunk))];
      out.grad[static_cast<size_t>(op.chunk)].rel_error +=
          rep.grad.at(chunks.local[static_cast<size_t>(op.chunk)]).rel_error;
      continue;
    }
    if (!is_send(op.kind)) continue;
    const auto it = sent.find({static_cast<int>(op.kind), op.chunk, op.microbatch, op.replica});
    const double e = it == sent.end() ? NAN : it->second;
    if (op.kind == netmodel::OpKind::kSendActivation)
      out.fw[static_cast<size_t>(op.chunk)].rel_error += e;
    else
      out.bw[static_cast<size_t>(op.chunk - 1)].rel_error += e;
  }
  finish(out.fw);
  finish(out.bw);
  finish(out.grad);
}

// Receivers' decode seconds, keyed by (kind, sending chunk, micro-batch, replica).
std::map<DecodeKey, double> decode_seconds(const std::vector<RankReport>& reports,
                                           const Layout& layout) {
  std::map<DecodeKey, double> decode;
  for (int rank = 0; rank < layout.world(); ++rank)
    for (const DecodeTime& d : reports[static_cast<size_t>(rank)].decodes)
      decode[{static_cast<int>(d.kind), d.stage, d.microbatch, layout.replica_of(rank)}] +=
          d.seconds;
  return decode;
}

// The ops after the pipeline's: the momentum exchange's chunk by chunk, each
// replica's exchange and then its optimizer step (sim/engine_momentum.cpp);
// else the all-reduces chunk by chunk, then the optimizer steps replica by
// replica.
void append_updates(std::vector<std::deque<netmodel::TraceOp>>& queue, const Layout& layout,
                    const Chunks& chunks, bool sharded, std::vector<netmodel::TraceOp>& ops) {
  const int C = chunks.count(), D = layout.replicas;
  const auto pop = [&](int r, int c, netmodel::OpKind kind) {
    auto& q = queue[static_cast<size_t>(chunks.rank(layout, r, c))];
    if (!q.empty() && q.front().kind == kind) {
      ops.push_back(q.front());
      q.pop_front();
    }
  };
  if (sharded) {
    for (int c = 0; c < C; ++c)
      for (int r = 0; r < D; ++r) {
        pop(r, c, netmodel::OpKind::kAllReduce);
        pop(r, c, netmodel::OpKind::kOptimizer);
      }
    return;
  }
  for (int c = 0; c < C; ++c)
    for (int r = 0; r < D; ++r) pop(r, c, netmodel::OpKind::kAllReduce);
  for (int r = 0; r < D; ++r)
    for (int c = 0; c < C; ++c) pop(r, c, netmodel::OpKind::kOptimizer);
}

// Trace: replica by replica in the global op order, each compute op followed
// by its send; then the updates (append_updates).
std::vector<netmodel::TraceOp> merge_trace(const std::vector<RankReport>& reports,
                                           const Layout& layout, const Chunks& chunks,
                                           const std::vector<netmodel::ScheduledOp>& order) {
  const int D = layout.replicas;
  const std::map<DecodeKey, double> decode = decode_seconds(reports, layout);
  std::vector<std::deque<netmodel::TraceOp>> queue(static_cast<size_t>(layout.world()));
  for (int rank = 0; rank < layout.world(); ++rank)
    for (const auto& op : reports[static_cast<size_t>(rank)].ops)
      queue[static_cast<size_t>(rank)].push_back(op);
  std::vector<netmodel::TraceOp> ops;
  for (int r = 0; r < D; ++r) {
    for (const netmodel::ScheduledOp& p : order) {
      auto& q = queue[static_cast<size_t>(chunks.rank(layout, r, p.chunk))];
      if (q.empty()) throw std::logic_error("dist: a rank reported fewer ops than its schedule");
      ops.push_back(q.front());
      q.pop_front();
      if (!q.empty() && is_send(q.front().kind)) {
        netmodel::TraceOp send = q.front();
        q.pop_front();
        const auto it = decode.find({static_cast<int>(send.kind), send.chunk, send.microbatch, r});
        if (it != decode.end()) send.decode_s = it->second;
        ops.push_back(send);
      }
    }
  }
  append_updates(queue, layout, chunks, !reports.empty() && reports[0].sharded, ops);
  return ops;
}

}  // namespace

sim::StepResult merge(const std::vector<RankReport>& reports, const Layout& layout,
                      const std::vector<netmodel::ScheduledOp>& order,
                      std::vector<int32_t> device_of) {
  const int D = layout.replicas;
  const Chunks chunks(std::move(device_of), layout.stages);
  sim::StepResult out;
  // The single-process engine sums losses replica by replica, micro-batch by
  // micro-batch; the device of the last chunk holds them.
  double loss_sum = 0;
  for (int r = 0; r < D; ++r)
    for (double l : reports[static_cast<size_t>(chunks.rank(layout, r, chunks.count() - 1))].losses)
      loss_sum += l;
  out.loss = loss_sum / D;
  out.grad_norm = reports[0].grad_norm;
  merge_channels(reports, layout, chunks, out);
  out.trace.ops = merge_trace(reports, layout, chunks, order);
  rel_errors(reports, layout, chunks, out);
  for (const auto& op : out.trace.ops) out.compute_s += op.compute_s;
  return out;
}

}  // namespace slowpipe::dist
