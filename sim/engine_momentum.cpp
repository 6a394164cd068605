// The momentum exchange of data-parallel replicas (compress.grad_sync =
// momentum; docs/grad-sync.md): after the warm-up, each replica computes its
// optimizer's next first moment from its own (clipped) gradients; the moment
// of every chunk is cut into D shards, replica j serves shard j: every replica
// sends it shard j through its worker channel (compress.grad, error feedback
// on the worker side), replica j averages the D decoded shards and sends the
// average back through its server channel (error feedback on the server
// side). Every replica then steps with the same averaged moment.
#include <ATen/ATen.h>

#include "common/errors.h"
#include "compressors/channels/factory.h"
#include "compressors/codecs/channel_spec.h"
#include "config/optim_registry.h"
#include "sim/engine.h"
#include "sim/engine_parts.h"
#include "sim/internal/engine_replica.h"
#include "sim/internal/optimizer_impl.h"

namespace slowpipe::sim {
namespace {

// One chunk's averaged moment [1, N] from the replicas' `local` moments:
// replica j serves shard j, every replica r sends it shard j through
// `workers[r * D + j]` and j sends the average back through `servers[j]`.
// Adds every transfer that crosses the network to `grad`; `sent[r]`: what
// replica r encodes, sends and decodes.
at::Tensor average_moment(const std::vector<at::Tensor>& local,
                          const std::vector<compressors::Channel*>& workers,
                          const std::vector<compressors::Channel*>& servers, ChannelSummary& grad,
                          std::vector<compressors::TransferStats>& sent) {
  const int D = static_cast<int>(local.size());
  const int64_t n = local[0].size(1);
  at::Tensor mean = at::empty({1, n}, at::kFloat);
  for (int j = 0; j < D; ++j) {
    const auto [begin, len] = shard_range(n, D, j);
    if (len == 0) continue;
    at::Tensor sum;
    for (int r = 0; r < D; ++r) {
      compressors::TransferStats st;
      const at::Tensor x = local[r].narrow(1, begin, len).contiguous();
      const at::Tensor y = workers[r * D + j]->transfer(x, at::Tensor(), &st);
      sum = sum.defined() ? sum + y : y.clone();
      sent[r].bytes += st.bytes;
      sent[r].encode_s += st.encode_s;
      sent[j].decode_s += st.decode_s;
      if (r != j) add_transfer(grad, st);  // the server's own shard stays local
    }
    compressors::TransferStats st;
    const at::Tensor avg = sum / D;
    mean.narrow(1, begin, len).copy_(servers[j]->transfer(avg, at::Tensor(), &st));
    sent[j].encode_s += st.encode_s;
    for (int r = 0; r < D; ++r) {
      if (r == j) continue;
      add_transfer(grad, st);  // one copy of the average to every other replica
      sent[r].decode_s += st.decode_s;
    }
  }
  return mean;
}

}  // namespace

void PipelineEngine::build_momentum_channels() {
  const int C = stages(), D = replicas();
  if (setup_.compress.grad_sync != compressors::GradSync::kMomentum || D < 2) return;
  require_momentum(setup_.optim);
  if (setup_.channel_factory) {
    throw std::logic_error("the momentum exchange builds its own channels (no channel factory)");
  }
  const compressors::ChannelSpec& spec = setup_.compress.grad.resolved();
  for (int r = 0; r < D; ++r) {
    Replica& rep = *replicas_[r];
    for (int c = 0; c < C; ++c) {
      for (int j = 0; j < D; ++j) {
        const std::string name = "r" + std::to_string(r) + ".momentum" + std::to_string(c) +
                                 ".shard" + std::to_string(j);
        const uint64_t salt = (uint64_t{1} << 32) + (static_cast<uint64_t>(r) * C + c) * D + j;
        rep.momentum.push_back(
            compressors::make_channel(spec, channel_context(setup_, name, salt)));
      }
      const std::string name =
          "r" + std::to_string(r) + ".momentum" + std::to_string(c) + ".server";
      const uint64_t salt = (uint64_t{1} << 33) + static_cast<uint64_t>(r) * C + c;
      rep.momentum_server.push_back(
          compressors::make_channel(spec, channel_context(setup_, name, salt)));
    }
  }
}

bool PipelineEngine::momentum_exchange_active(int64_t step) const {
  if (replicas_[0]->momentum.empty() || step < setup_.compress.momentum_warmup_steps) {
    return false;
  }
  for (const auto& rep : replicas_) {
    for (const auto& o : rep->optimizers) {
      if (!o.has_moments()) return false;
    }
  }
  return true;
}

void PipelineEngine::exchange_momentum(StepResult& result, int64_t step, int64_t total_steps) {
  const int C = stages(), D = replicas();
  result.lr = config::learning_rate(setup_.optim, step, total_steps);
  result.grad.resize(C);
  result.trace.sharded_exchange = true;
  for (int r = 0; r < D; ++r) {
    const double norm = clip_replica(r, step);  // each replica its own gradients
    if (r == 0) result.grad_norm = norm;
  }
  for (int c = 0; c < C; ++c) {
    std::vector<at::Tensor> local(D);
    for (int r = 0; r < D; ++r) {
      replicas_[r]->optimizers[c].set_lr(result.lr);
      local[r] = replicas_[r]->optimizers[c].next_momentum().cpu();  // [1, N]
    }
    // Replica r's channel to server j, and server j's channel back.
    std::vector<compressors::Channel*> workers(static_cast<size_t>(D) * D), servers(D);
    for (int r = 0; r < D; ++r) {
      for (int j = 0; j < D; ++j) workers[r * D + j] = replicas_[r]->momentum[c * D + j].get();
      servers[r] = replicas_[r]->momentum_server[c].get();
    }
    // Per replica: what it sends and decodes (its trace op's bytes and seconds).
    std::vector<compressors::TransferStats> sent(D);
    const at::Tensor mean = average_moment(local, workers, servers, result.grad[c], sent);
    for (int r = 0; r < D; ++r) {
      Replica& rep = *replicas_[r];
      // The trace's exchange op: this replica's whole compressed moment; the
      // network model sends 1/D of it to each other replica and gets 1/D back.
      compressors::TransferStats st = sent[r];
      ChannelSummary unused;
      result.trace.ops.push_back(message_op(netmodel::OpKind::kAllReduce,
                                            OpSite{schedule_.device_of[c], c, -1, r}, local[r], st,
                                            unused));
      sync_device();
      const OpTimer timer;
      rep.optimizers[c].step_with_momentum(mean);
      sync_device();
      netmodel::TraceOp op =
          compute_op(netmodel::OpKind::kOptimizer, OpSite{schedule_.device_of[c], c, -1, r}, timer,
                     rep.optimizers[c].flops_per_step());
      op.memory_bytes = rep.optimizers[c].memory_bytes_per_step();
      op.kernels = static_cast<int>(rep.stage_params[c].size());
      result.trace.ops.push_back(op);
    }
  }
}

}  // namespace slowpipe::sim
