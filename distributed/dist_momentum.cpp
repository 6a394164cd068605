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

constexpr int kShardTag = 1200000;  // + the chunk

}  // namespace

void DistEngine::build_momentum_channels(Part& p) {
  const int C = chunks(), D = layout_.replicas, r = replica_, s = p.chunk;
  if (setup_.compress.grad_sync != compressors::GradSync::kMomentum || D < 2) return;
  sim::require_momentum(setup_.optim);
  const compressors::ChannelSpec& spec = setup_.compress.grad.resolved();
  // Replica q's channel to shard j of this chunk, and q's server channel.
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
    p.m_workers.push_back(worker(r, j));
    p.m_shadows.push_back(j == r ? nullptr : worker(r, j));
    p.m_inbound.push_back(j == r ? nullptr : worker(j, r));
    p.m_servers.push_back(server(j));
  }
}

bool DistEngine::momentum_active(int64_t step) {
  if (parts_[0].m_workers.empty() || step < setup_.compress.momentum_warmup_steps) return false;
  // One process asks every chunk's optimizer; the replicas of a chunk hold the
  // same state, so the devices of this replica decide for all.
  bool mine = true;
  for (const Part& p : parts_) mine = mine && p.optimizer->has_moments();
  at::Tensor flag = at::full({1}, mine ? 1.0f : 0.0f, at::kFloat);
  const at::Tensor all = layout_.stages > 1 ? comm_->allgather_replica(flag) : flag.unsqueeze(0);
  return all.min().item<float>() > 0;
}

// One chunk's exchange on this rank: its moment, what it encodes, sends and
// decodes (its trace op), its own shard through its whole channel, and the
// server's message and its own decoding of it.
struct DistEngine::MomentumRound {
  Part& part;
  size_t k;          // the part's index on this rank
  at::Tensor local;  // [1, N]
  compressors::TransferStats sent;
  at::Tensor own, own_mean;
  Bytes server_msg;
};

void DistEngine::exchange_momentum(int64_t step, int64_t total, RankReport& rep) {
  const int D = layout_.replicas, r = replica_;
  clip_gradients(step, rep);  // this replica's own gradients
  rep.shard_errors.assign(parts_.size() * static_cast<size_t>(D), NAN);
  rep.server_errors.assign(parts_.size(), 0);
  for (size_t k = 0; k < parts_.size(); ++k) {
    Part& p = parts_[k];
    p.optimizer->set_lr(config::learning_rate(setup_.optim, step, total));
    MomentumRound round{p, k, p.optimizer->next_momentum().cpu(), {}, {}, {}, {}};
    send_shards(round, rep);
    serve_shard(round, rep);
    const at::Tensor mean = gather_mean(round, rep);
    sim::ChannelSummary unused;
    rep.ops.push_back(sim::message_op(netmodel::OpKind::kAllReduce, {stage_, p.chunk, -1, r},
                                      round.local, round.sent, unused));
    const sim::OpTimer timer;
    p.optimizer->step_with_momentum(mean);
    rep.ops.push_back(optimizer_op(p, timer));
  }
  rep.sharded = true;
}

// Shard j of the moment to rank (j, this device); this replica's own through its whole channel.
void DistEngine::send_shards(MomentumRound& round, RankReport& rep) {
  const int D = layout_.replicas, r = replica_;
  Part& p = round.part;
  const int64_t n = round.local.size(1);
  for (int j = 0; j < D; ++j) {
    const auto [begin, len] = sim::shard_range(n, D, j);
    if (len == 0) continue;
    const at::Tensor x = round.local.narrow(1, begin, len).contiguous();
    compressors::TransferStats st;
    const auto ju = static_cast<size_t>(j);
    if (j == r) {
      round.own = p.m_workers[ju]->transfer(x, at::Tensor(), &st);
      round.sent.decode_s += st.decode_s;
    } else {
      Bytes msg;
      p.m_workers[ju]->send(x, at::Tensor(), msg, &st);
      rep.grad_wire[round.k] +=
          comm_->send(msg, {1, len}, layout_.rank(j, stage_), kShardTag + p.chunk);
      double& e = rep.shard_errors[round.k * static_cast<size_t>(D) + ju];
      e = compressors::transfer_rel_error(
          x, p.m_shadows[ju]->receive(msg, {1, len}, at::Tensor(), nullptr));
      st.rel_error = e;
      sim::add_transfer(rep.grad[round.k], st);  // crosses the network
    }
    round.sent.bytes += st.bytes;
    round.sent.encode_s += st.encode_s;
  }
}

// Serves shard r: decodes the D shards in replica order, averages, encodes the average.
void DistEngine::serve_shard(MomentumRound& round, RankReport& rep) {
  const int D = layout_.replicas, r = replica_;
  Part& p = round.part;
  const auto [begin, len] = sim::shard_range(round.local.size(1), D, r);
  if (len == 0) return;
  at::Tensor sum;
  for (int q = 0; q < D; ++q) {
    at::Tensor y = round.own;
    if (q != r) {
      compressors::TransferStats st;
      const Bytes msg = comm_->recv(layout_.rank(q, stage_), kShardTag + p.chunk, nullptr);
      y = p.m_inbound[static_cast<size_t>(q)]->receive(msg, {1, len}, at::Tensor(), &st);
      round.sent.decode_s += st.decode_s;
    }
    sum = sum.defined() ? sum + y : y.clone();
  }
  const at::Tensor avg = sum / D;
  compressors::Channel& server = *p.m_servers[static_cast<size_t>(r)];
  compressors::TransferStats st;
  server.send(avg, at::Tensor(), round.server_msg, &st);
  round.sent.encode_s += st.encode_s;
  round.own_mean = server.receive(round.server_msg, {1, len}, at::Tensor(), &st);
  rep.server_errors[round.k] = compressors::transfer_rel_error(avg, round.own_mean);
  st.rel_error = rep.server_errors[round.k];
  for (int q = 0; q + 1 < D; ++q) sim::add_transfer(rep.grad[round.k], st);  // to the others
}

// Every server's average, decoded by every replica, assembled into [1, N].
at::Tensor DistEngine::gather_mean(MomentumRound& round, RankReport& rep) {
  const int D = layout_.replicas, r = replica_;
  const int64_t n = round.local.size(1);
  comm_->wait_sends();
  const std::vector<Bytes> all = comm_->allgather(round.server_msg);
  rep.grad_wire[round.k] += round.server_msg.size() + sizeof(int64_t);
  at::Tensor mean = at::empty({1, n}, at::kFloat);
  for (int j = 0; j < D; ++j) {
    const auto [b, l] = sim::shard_range(n, D, j);
    if (l == 0) continue;
    if (j == r) {
      mean.narrow(1, b, l).copy_(round.own_mean);
      continue;
    }
    compressors::TransferStats st;
    mean.narrow(1, b, l).copy_(round.part.m_servers[static_cast<size_t>(j)]->receive(
        all[static_cast<size_t>(j)], {1, l}, at::Tensor(), &st));
    round.sent.decode_s += st.decode_s;
  }
  return mean;
}

}  // namespace slowpipe::dist
