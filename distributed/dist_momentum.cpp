// The momentum exchange across processes (compress.grad_sync = momentum;
// docs/grad-sync.md, sim/engine_momentum.cpp in one process). Rank (r, s)
// computes its next first moment of stage s from its own clipped gradients,
// cuts it into D shards and sends shard j through its worker channel to rank
// (j, s), which serves shard j: it decodes the D shards in replica order (its
// own through the whole channel, as one process does), averages them, and
// sends the average through its server channel; every rank decodes every
// server's message and steps with the assembled average. Channels are named
// and seeded as in one process, so every message and every update is the
// single-process one, bit for bit.
#include <torch/torch.h>

#include <cmath>

#include "common/errors.h"
#include "compressors/channels/factory.h"
#include "compressors/channels/rel_error.h"
#include "config/optim_registry.h"
#include "distributed/dist_engine.h"
#include "sim/engine_parts.h"

namespace slowpipe::dist {
namespace {

constexpr int kShardTag = 1000005;

// Shard j of a flat [1, N] moment over D replicas: [j * L, min(N, (j + 1) * L)),
// as sim/engine_momentum.cpp cuts it.
std::pair<int64_t, int64_t> shard_range(int64_t n, int d, int j) {
  const int64_t len = (n + d - 1) / d;
  const int64_t begin = std::min(n, j * len);
  return {begin, std::min(n, begin + len) - begin};
}

}  // namespace

void DistEngine::build_momentum_channels() {
  const int C = layout_.stages, D = layout_.replicas, r = replica_, s = stage_;
  if (setup_.compress.grad_sync != compressors::GradSync::kMomentum || D < 2) return;
  sim::require_momentum(setup_.optim);
  const compressors::ChannelSpec& spec = setup_.compress.grad.resolved();
  // Replica q's channel to shard j of this stage, and q's server channel.
  const auto worker = [&](int q, int j) {
    const std::string name =
        "r" + std::to_string(q) + ".momentum" + std::to_string(s) + ".shard" + std::to_string(j);
    const uint64_t salt = (uint64_t{1} << 32) + (static_cast<uint64_t>(q) * C + s) * D + j;
    return compressors::make_channel(spec, sim::channel_context(setup_, name, salt));
  };
  const auto server = [&](int q) {
    const std::string name = "r" + std::to_string(q) + ".momentum" + std::to_string(s) + ".server";
    const uint64_t salt = (uint64_t{1} << 33) + static_cast<uint64_t>(q) * C + s;
    return compressors::make_channel(spec, sim::channel_context(setup_, name, salt));
  };
  for (int j = 0; j < D; ++j) {
    m_workers_.push_back(worker(r, j));
    m_shadows_.push_back(j == r ? nullptr : worker(r, j));
    m_inbound_.push_back(j == r ? nullptr : worker(j, r));
    m_servers_.push_back(server(j));
  }
}

bool DistEngine::momentum_active(int64_t step) {
  if (m_workers_.empty() || step < setup_.compress.momentum_warmup_steps) return false;
  // One process asks every stage's optimizer; the replicas of a stage hold the
  // same state, so the stages of this replica decide for all.
  at::Tensor mine = at::full({1}, optimizer_->has_moments() ? 1.0f : 0.0f, at::kFloat);
  const at::Tensor all = layout_.stages > 1 ? comm_->allgather_replica(mine) : mine.unsqueeze(0);
  return all.min().item<float>() > 0;
}

// One step's exchange on this rank: its moment, what it encodes, sends and
// decodes (its trace op), its own shard through its whole channel, and the
// server's message and its own decoding of it.
struct DistEngine::MomentumRound {
  at::Tensor local;  // [1, N]
  compressors::TransferStats sent;
  at::Tensor own, own_mean;
  Bytes server_msg;
};

void DistEngine::exchange_momentum(int64_t step, int64_t total, RankReport& rep) {
  const int r = replica_, s = stage_;
  clip_gradients(step, rep);  // this replica's own gradients
  optimizer_->set_lr(config::learning_rate(setup_.optim, step, total));
  MomentumRound round;
  round.local = optimizer_->next_momentum().cpu();
  send_shards(round, rep);
  serve_shard(round, rep);
  const at::Tensor mean = gather_mean(round, rep);
  sim::ChannelSummary unused;
  rep.ops.push_back(sim::message_op(netmodel::OpKind::kAllReduce, {s, s, -1, r}, round.local,
                                    round.sent, unused));
  const sim::OpTimer timer;
  optimizer_->step_with_momentum(mean);
  rep.ops.push_back(optimizer_op(timer));
  rep.sharded = true;
}

// Shard j of the moment to rank (j, s); this replica's own through its whole channel.
void DistEngine::send_shards(MomentumRound& round, RankReport& rep) {
  const int D = layout_.replicas, r = replica_, s = stage_;
  const int64_t n = round.local.size(1);
  rep.shard_errors.assign(static_cast<size_t>(D), NAN);
  for (int j = 0; j < D; ++j) {
    const auto [begin, len] = shard_range(n, D, j);
    if (len == 0) continue;
    const at::Tensor x = round.local.narrow(1, begin, len).contiguous();
    compressors::TransferStats st;
    const auto ju = static_cast<size_t>(j);
    if (j == r) {
      round.own = m_workers_[ju]->transfer(x, at::Tensor(), &st);
      round.sent.decode_s += st.decode_s;
    } else {
      Bytes msg;
      m_workers_[ju]->send(x, at::Tensor(), msg, &st);
      rep.grad_wire += comm_->send(msg, {1, len}, layout_.rank(j, s), kShardTag);
      rep.shard_errors[ju] = compressors::transfer_rel_error(
          x, m_shadows_[ju]->receive(msg, {1, len}, at::Tensor(), nullptr));
      st.rel_error = rep.shard_errors[ju];
      sim::add_transfer(rep.grad, st);  // crosses the network
    }
    round.sent.bytes += st.bytes;
    round.sent.encode_s += st.encode_s;
  }
}

// Serves shard r: decodes the D shards in replica order, averages, encodes the average.
void DistEngine::serve_shard(MomentumRound& round, RankReport& rep) {
  const int D = layout_.replicas, r = replica_, s = stage_;
  const auto [begin, len] = shard_range(round.local.size(1), D, r);
  if (len == 0) return;
  at::Tensor sum;
  for (int q = 0; q < D; ++q) {
    at::Tensor y = round.own;
    if (q != r) {
      compressors::TransferStats st;
      const Bytes msg = comm_->recv(layout_.rank(q, s), kShardTag, nullptr);
      y = m_inbound_[static_cast<size_t>(q)]->receive(msg, {1, len}, at::Tensor(), &st);
      round.sent.decode_s += st.decode_s;
    }
    sum = sum.defined() ? sum + y : y.clone();
  }
  const at::Tensor avg = sum / D;
  compressors::Channel& server = *m_servers_[static_cast<size_t>(r)];
  compressors::TransferStats st;
  server.send(avg, at::Tensor(), round.server_msg, &st);
  round.sent.encode_s += st.encode_s;
  round.own_mean = server.receive(round.server_msg, {1, len}, at::Tensor(), &st);
  rep.server_error = compressors::transfer_rel_error(avg, round.own_mean);
  st.rel_error = rep.server_error;
  for (int q = 0; q + 1 < D; ++q) sim::add_transfer(rep.grad, st);  // to the D - 1 others
}

// Every server's average, decoded by every replica, assembled into [1, N].
at::Tensor DistEngine::gather_mean(MomentumRound& round, RankReport& rep) {
  const int D = layout_.replicas, r = replica_;
  const int64_t n = round.local.size(1);
  comm_->wait_sends();
  const std::vector<Bytes> all = comm_->allgather(round.server_msg);
  rep.grad_wire += round.server_msg.size() + sizeof(int64_t);
  at::Tensor mean = at::empty({1, n}, at::kFloat);
  for (int j = 0; j < D; ++j) {
    const auto [b, l] = shard_range(n, D, j);
    if (l == 0) continue;
    if (j == r) {
      mean.narrow(1, b, l).copy_(round.own_mean);
      continue;
    }
    compressors::TransferStats st;
    mean.narrow(1, b, l).copy_(m_servers_[static_cast<size_t>(j)]->receive(
        all[static_cast<size_t>(j)], {1, l}, at::Tensor(), &st));
    round.sent.decode_s += st.decode_s;
  }
  return mean;
}

}  // namespace slowpipe::dist
