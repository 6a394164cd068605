// DistEngine's part of one step on this rank: its chunks' ops in its device's
// schedule order with real messages, the data-parallel gradient exchange, the
// global gradient norm across the replica's chunks, and the optimizer steps.
#include <torch/cuda.h>
#include <torch/torch.h>

#include <cmath>
#include <map>

#include "common/errors.h"
#include "compressors/channels/rel_error.h"
#include "config/optim_registry.h"
#include "distributed/dist_engine.h"
#include "sim/engine_parts.h"

namespace slowpipe::dist {
namespace {

using netmodel::OpKind;

// The tags of boundary b's messages of micro-batch m (M micro-batches).
int act_tag(int b, int m, int M) {
  return 2 * (b * M + m);
}
int grad_tag(int b, int m, int M) {
  return 2 * (b * M + m) + 1;
}

Dims dims_of(const at::Tensor& t) {
  return Dims(t.sizes().begin(), t.sizes().end());
}

// The relative error of a message this rank sent: decoded by `shadow`, this
// rank's copy of the receiver's half, which sees every message the receiver
// sees and so reconstructs what it does.
double sent_error(compressors::Channel& shadow, const at::Tensor& x, const Bytes& msg,
                  const at::Tensor& ids) {
  return compressors::transfer_rel_error(x.detach(), shadow.receive(msg, dims_of(x), ids, nullptr));
}

}  // namespace

RankReport DistEngine::local_step(const models::Batch& batch, int64_t step, int64_t total) {
  const auto boundaries = static_cast<size_t>(chunks() - 1);
  RankReport rep;
  rep.fw.resize(boundaries);
  rep.bw.resize(boundaries);
  rep.fw_wire.assign(boundaries, 0);
  rep.bw_wire.assign(boundaries, 0);
  rep.grad.resize(parts_.size());
  rep.grad_wire.assign(parts_.size(), 0);
  share_projections(&rep);
  for (Part& p : parts_) p.optimizer->zero_grad();
  pipeline_ops(batch, step, rep);
  comm_->wait_sends();
  add_shared_gradients(rep);
  if (momentum_active(step)) {
    exchange_momentum(step, total, rep);
  } else {
    if (layout_.replicas > 1) sync_gradients(rep);
    clip_and_update(step, total, rep);
  }
  // The state one process would hold: every half in use here (not the
  // shadows, nor the other replicas' server receivers).
  for (const Part& p : parts_) {
    for (auto* ch : {p.fw_out.get(), p.bw_in.get(), p.fw_in.get(), p.bw_out.get()})
      if (ch) rep.channel_state_bytes += ch->state_bytes();
    for (const auto* list : {&p.grad, &p.m_workers, &p.m_inbound})
      for (const auto& ch : *list)
        if (ch) rep.channel_state_bytes += ch->state_bytes();
    if (!p.m_servers.empty())
      rep.channel_state_bytes += p.m_servers[static_cast<size_t>(replica_)]->state_bytes();
  }
  return rep;
}

// A step's view of its batch from this rank: which rows micro-batch m is, the
// ids its channels key per-sample state by, and the tensors a forward keeps
// for its backward, per (chunk, micro-batch): slot(c, m).
struct DistEngine::StepSlices {
  const models::Batch& batch;
  int64_t step = 0;
  int64_t shard = 0, mb = 0;  // samples per replica, per micro-batch
  int replica = 0;
  int M = 1;
  int64_t shard_samples = 0;  // EngineSetup::shard_samples
  torch::Device device;
  std::vector<at::Tensor> inputs, outputs;
  // A split backward (zb-h1): the gradient each input pass received, kept for
  // the weight pass, and the input pass's measured seconds (wall, thread CPU).
  std::vector<at::Tensor> grads_in;
  std::vector<std::pair<double, double>> input_pass;

  int64_t begin(int m) const { return replica * shard + m * mb; }
  size_t slot(int chunk, int m) const { return static_cast<size_t>(chunk * M + m); }
  // Channels key per-sample state by the id within the replica's shard.
  at::Tensor ids(int m) const {
    const at::Tensor all = batch.ids.narrow(0, begin(m), mb);
    return shard_samples > 0 ? all - replica * shard_samples : all;
  }
  void sync() const {
    if (device.is_cuda()) torch::cuda::synchronize();
  }
};

DistEngine::Part& DistEngine::part_of(int chunk) {
  for (Part& p : parts_)
    if (p.chunk == chunk) return p;
  throw std::logic_error("dist: chunk " + std::to_string(chunk) + " is not on this rank");
}

void DistEngine::pipeline_ops(const models::Batch& batch, int64_t step, RankReport& rep) {
  const int D = layout_.replicas, M = setup_.pipeline.microbatches;
  const int64_t B = batch.inputs.size(0);
  if (B % (static_cast<int64_t>(D) * M) != 0)
    throw UsageError("batch of " + std::to_string(B) + " samples does not split into " +
                     std::to_string(D) + " replicas x " + std::to_string(M) + " micro-batches");
  const int64_t shard = B / D;
  const auto n = static_cast<size_t>(chunks() * M);
  StepSlices c{batch,
               step,
               shard,
               shard / M,
               replica_,
               M,
               setup_.shard_samples,
               torch::Device(setup_.device),
               std::vector<at::Tensor>(n),
               std::vector<at::Tensor>(n),
               std::vector<at::Tensor>(n),
               std::vector<std::pair<double, double>>(n)};
  prefetch_messages();
  for (const netmodel::ScheduledOp& op : my_ops_) {
    Part& p = part_of(op.chunk);
    if (op.pass == netmodel::Pass::kForward) {
      forward_op(c, p, op.microbatch, rep);
    } else if (op.pass == netmodel::Pass::kBackwardWeight) {
      run_capturing(op, [&] { weight_op(c, p, op.microbatch, rep); });
    } else {
      run_capturing(op, [&] {
        backward_op(c, p, op.microbatch, op.pass == netmodel::Pass::kBackwardInput, rep);
      });
    }
  }
  comm_->end_prefetch();
}

// Every message this device will receive, per sending rank in the order its
// ops consume them (with interleaving, one neighbour sends both kinds).
void DistEngine::prefetch_messages() {
  const int C = chunks(), M = setup_.pipeline.microbatches, r = replica_;
  std::map<int, std::vector<int>> from;
  for (const netmodel::ScheduledOp& op : my_ops_) {
    const int k = op.chunk;
    if (op.pass == netmodel::Pass::kForward && k > 0)
      from[layout_.rank(r, device_of_[static_cast<size_t>(k - 1)])].push_back(
          act_tag(k - 1, op.microbatch, M));
    if (op.pass != netmodel::Pass::kForward && op.pass != netmodel::Pass::kBackwardWeight &&
        k < C - 1)
      from[layout_.rank(r, device_of_[static_cast<size_t>(k + 1)])].push_back(
          grad_tag(k, op.microbatch, M));
  }
  for (auto& [src, tags] : from) comm_->prefetch(src, std::move(tags));
}

// Micro-batch m's forward of chunk p: take and decode the activation (or the
// tokens on chunk 0), run the chunk (and the loss on the last), send the
// output on.
void DistEngine::forward_op(StepSlices& c, Part& p, int m, RankReport& rep) {
  const int C = chunks(), r = replica_, k = p.chunk, M = c.M;
  const size_t i = c.slot(k, m);
  const at::Tensor ids = c.ids(m);
  const at::Tensor tokens = c.batch.inputs.narrow(0, c.begin(m), c.mb).to(c.device);
  at::Tensor x;
  if (k == 0) {
    x = tokens;
  } else {
    Dims dims;
    const Bytes msg = comm_->take(layout_.rank(r, device_of_[static_cast<size_t>(k - 1)]),
                                  act_tag(k - 1, m, M), &dims);
    compressors::TransferStats st;
    const at::Tensor got = p.fw_in->receive(msg, dims, ids, &st);
    rep.fw[static_cast<size_t>(k - 1)].decode_s += st.decode_s;
    rep.decodes.push_back({OpKind::kSendActivation, k - 1, m, st.decode_s});
    x = got.to(c.device).detach().requires_grad_(true);
    c.inputs[i] = x;
  }
  c.sync();
  const sim::OpTimer timer;
  at::Tensor y = chunk_forward(p, x, tokens);
  if (k == C - 1) {
    const at::Tensor targets = c.batch.targets.narrow(0, c.begin(m), c.mb).to(c.device);
    y = models::loss(task(), y, targets) * (static_cast<double>(c.mb) / c.shard);
  }
  c.sync();
  rep.ops.push_back(
      sim::compute_op(OpKind::kForward, {stage_, k, m, r}, timer, p.flops_per_sample * c.mb));
  rep.ops.back().kernels = p.forward_kernels;
  c.outputs[i] = y;
  if (k < C - 1) send_forward(c, p, m, y, rep);
}

// The forward message of chunk p's output y across boundary p.chunk.
void DistEngine::send_forward(StepSlices& c, Part& p, int m, const at::Tensor& y, RankReport& rep) {
  const int r = replica_, k = p.chunk;
  if (!sim::all_finite(y))
    throw sim::NonFiniteError("non-finite activation at " + sim::where(c.step, r, m) + ": stage " +
                              std::to_string(k) + " output, forward across boundary " +
                              std::to_string(k));
  const at::Tensor ids = c.ids(m);
  const at::Tensor tokens = c.batch.inputs.narrow(0, c.begin(m), c.mb);
  compressors::TransferStats st;
  Bytes msg;
  p.fw_out->send(y.detach(), ids, msg, &st);
  rep.errors.push_back({OpKind::kSendActivation, k, m, sent_error(*p.fw_shadow, y, msg, ids)});
  st.bytes += models::side_bytes(model_, cuts_[static_cast<size_t>(k) + 1],
                                 tokens);  // token ids a boundary map sends (counted)
  const int to = device_of_[static_cast<size_t>(k) + 1];
  rep.fw_wire[static_cast<size_t>(k)] +=
      comm_->send(msg, dims_of(y), layout_.rank(r, to), act_tag(k, m, c.M));
  rep.ops.push_back(sim::message_op(OpKind::kSendActivation, {stage_, k, m, r, to}, y, st,
                                    rep.fw[static_cast<size_t>(k)]));
}

// Micro-batch m's backward of chunk p: take and decode the gradient (the loss
// on the last chunk), run the backward, send the input's gradient back.
// `split`: the input pass of a split backward (as sim/engine.cpp's
// run_backward): only the input's gradient, the graph kept for weight_op.
void DistEngine::backward_op(StepSlices& c, Part& p, int m, bool split, RankReport& rep) {
  const int C = chunks(), r = replica_, k = p.chunk, M = c.M;
  const size_t i = c.slot(k, m);
  const at::Tensor ids = c.ids(m);
  at::Tensor g;
  if (k < C - 1) {
    Dims dims;
    const Bytes msg = comm_->take(layout_.rank(r, device_of_[static_cast<size_t>(k + 1)]),
                                  grad_tag(k, m, M), &dims);
    compressors::TransferStats st;
    g = p.bw_in->receive(msg, dims, ids, &st).to(c.device);
    rep.bw[static_cast<size_t>(k)].decode_s += st.decode_s;
    rep.decodes.push_back({OpKind::kSendGradient, k + 1, m, st.decode_s});
  }
  c.sync();
  const sim::OpTimer timer;
  if (k == C - 1) {
    const double loss = c.outputs[i].item<double>();
    if (!std::isfinite(loss))
      throw sim::NonFiniteError("non-finite loss at " + sim::where(c.step, r, m) + " (last stage " +
                                std::to_string(k) + ")");
    rep.losses.push_back(loss);
  }
  at::Tensor grad;  // of the chunk's input
  if (!split) {
    c.outputs[i].backward(g);
    if (k > 0) grad = c.inputs[i].grad();
  } else if (k > 0) {
    grad = torch::autograd::grad({c.outputs[i]}, {c.inputs[i]},
                                 {g.defined() ? g : at::ones_like(c.outputs[i])},
                                 /*retain_graph=*/true)[0];
  }
  c.sync();
  // A split backward's input pass: about one forward's FLOPs (docs/schedules.md).
  rep.ops.push_back(sim::compute_op(split ? OpKind::kBackwardInput : OpKind::kBackward,
                                    {stage_, k, m, r}, timer,
                                    (split ? 1.0 : 2.0) * p.flops_per_sample * c.mb));
  rep.ops.back().kernels = (split ? 1 : 2) * p.forward_kernels;
  if (split) {
    c.input_pass[i] = {rep.ops.back().compute_s, rep.ops.back().thread_cpu_s};
    c.grads_in[i] = g;
  }
  if (k > 0) send_backward(c, p, m, grad, rep);
  if (split) return;  // the weight pass needs them
  c.outputs[i] = at::Tensor();
  c.inputs[i] = at::Tensor();
}

// The backward message of chunk p's input gradient across boundary p.chunk - 1.
void DistEngine::send_backward(StepSlices& c, Part& p, int m, const at::Tensor& grad,
                               RankReport& rep) {
  const int r = replica_, k = p.chunk;
  if (!sim::all_finite(grad))
    throw sim::NonFiniteError("non-finite activation-gradient at " + sim::where(c.step, r, m) +
                              ": stage " + std::to_string(k) + " input, backward across boundary " +
                              std::to_string(k - 1));
  const at::Tensor ids = c.ids(m);
  compressors::TransferStats st;
  Bytes msg;
  p.bw_out->send(grad, ids, msg, &st);
  rep.errors.push_back(
      {OpKind::kSendGradient, k, m, p.bw_shadow ? sent_error(*p.bw_shadow, grad, msg, ids) : NAN});
  st.bytes += models::side_bytes(model_, cuts_[static_cast<size_t>(k)],
                                 c.batch.inputs.narrow(0, c.begin(m), c.mb));
  const int to = device_of_[static_cast<size_t>(k - 1)];
  rep.bw_wire[static_cast<size_t>(k - 1)] +=
      comm_->send(msg, dims_of(grad), layout_.rank(r, to), grad_tag(k - 1, m, c.M));
  rep.ops.push_back(sim::message_op(OpKind::kSendGradient, {stage_, k, m, r, to}, grad, st,
                                    rep.bw[static_cast<size_t>(k - 1)]));
}

// The weight pass of a split backward: the chunk's parameter gradients from
// the kept graph and gradient (as sim/engine.cpp's run_weight_backward).
void DistEngine::weight_op(StepSlices& c, Part& p, int m, RankReport& rep) {
  const int C = chunks(), r = replica_, k = p.chunk;
  const size_t i = c.slot(k, m);
  c.sync();
  const sim::OpTimer timer;
  std::vector<at::Tensor> params;
  for (const auto& t : p.params)
    if (t.requires_grad()) params.push_back(t);
  // A learned projection's parameters this chunk reads at its entry (owned
  // by the chunk before; dist_shared.cpp takes their gradient from here).
  if (const models::BoundaryMap* map =
          k > 0 ? models::boundary_at(model_, cuts_[static_cast<size_t>(k)]) : nullptr) {
    for (const auto& t : map->parameters())
      if (t.requires_grad()) params.push_back(t);
  }
  torch::autograd::backward({c.outputs[i]}, {k == C - 1 ? at::Tensor() : c.grads_in[i]},
                            /*retain_graph=*/false, /*create_graph=*/false, params);
  c.sync();
  netmodel::TraceOp t =
      sim::compute_op(OpKind::kBackwardWeight, {stage_, k, m, r}, timer, p.flops_per_sample * c.mb);
  t.kernels = p.forward_kernels;
  // libtorch walks the chain of activation gradients again to reach the
  // parameters: what the input pass measured is not counted twice.
  if (k > 0) {
    t.compute_s = std::max(0.0, t.compute_s - c.input_pass[i].first);
    t.thread_cpu_s = std::max(0.0, t.thread_cpu_s - c.input_pass[i].second);
  }
  rep.ops.push_back(t);
  c.outputs[i] = at::Tensor();
  c.inputs[i] = at::Tensor();
  c.grads_in[i] = at::Tensor();
}

void DistEngine::sync_gradients(RankReport& rep) {
  const int D = layout_.replicas, r = replica_;
  for (size_t k = 0; k < parts_.size(); ++k) {
    Part& p = parts_[k];
    const at::Tensor g = sim::flat_gradient(p.params, p.chunk, r);
    compressors::TransferStats st;
    at::Tensor sum;
    Bytes msg;
    if (grad_plain_) {
      // fp32 through c10d's all-reduce; accounted as the `none` message it is.
      sum = g.to(at::kCPU, at::kFloat).contiguous().clone();
      comm_->allreduce_sum(sum);
      st.bytes = static_cast<uint64_t>(sum.nbytes());
      rep.grad_wire[k] += st.bytes;
    } else {
      // Every replica's message to every replica; each decodes all of them in
      // replica order with its receiver copy of that sender's channel.
      p.grad[static_cast<size_t>(r)]->send(g, at::Tensor(), msg, &st);
      const std::vector<Bytes> all = comm_->allgather(msg);
      rep.grad_wire[k] += msg.size() + sizeof(int64_t);
      const compressors::Shape shape = {1, g.size(1)};
      for (int q = 0; q < D; ++q) {
        const at::Tensor got = p.grad[static_cast<size_t>(q)]->receive(
            all[static_cast<size_t>(q)], shape, at::Tensor(), q == r ? &st : nullptr);
        if (q == r) st.rel_error = compressors::transfer_rel_error(g, got);
        sum = sum.defined() ? sum + got : got.clone();
      }
    }
    rep.ops.push_back(
        sim::message_op(OpKind::kAllReduce, {stage_, p.chunk, -1, r}, g, st, rep.grad[k]));
    sim::set_gradients(p.params, (sum / D).to(g.device()));
  }
}

void DistEngine::clip_and_update(int64_t step, int64_t total, RankReport& rep) {
  clip_gradients(step, rep);
  const torch::Device device(setup_.device);
  for (Part& p : parts_) {
    if (device.is_cuda()) torch::cuda::synchronize();
    const sim::OpTimer timer;
    p.optimizer->set_lr(config::learning_rate(setup_.optim, step, total));
    p.optimizer->step();
    rep.ops.push_back(optimizer_op(p, timer));
  }
}

netmodel::TraceOp DistEngine::optimizer_op(const Part& p, const sim::OpTimer& timer) const {
  if (torch::Device(setup_.device).is_cuda()) torch::cuda::synchronize();
  netmodel::TraceOp op = sim::compute_op(OpKind::kOptimizer, {stage_, p.chunk, -1, replica_}, timer,
                                         p.optimizer->flops_per_step());
  op.memory_bytes = p.optimizer->memory_bytes_per_step();
  op.kernels = static_cast<int>(p.params.size());
  return op;
}

void DistEngine::clip_gradients(int64_t step, RankReport& rep) {
  // The global norm over every chunk of this replica, as clip_global_norm
  // computes it in one process: the per-tensor norms of all chunks, stacked in
  // chunk order. Row of the exchange: per chunk of this device, [count,
  // norms..., padding].
  const int S = layout_.stages, C = chunks();
  size_t widest = 0;
  for (size_t n : params_per_chunk_) widest = std::max(widest, n);
  const auto w = static_cast<int64_t>(widest) + 1;
  at::Tensor mine = at::zeros({w * static_cast<int64_t>(parts_.size())}, at::kFloat);
  for (size_t k = 0; k < parts_.size(); ++k) {
    int64_t n = 0;
    for (const auto& p : parts_[k].params)
      if (p.grad().defined())
        mine[static_cast<int64_t>(k) * w + 1 + n++] = p.grad().norm(2).to(at::kCPU);
    mine[static_cast<int64_t>(k) * w] = static_cast<float>(n);
  }
  const at::Tensor all = S > 1 ? comm_->allgather_replica(mine) : mine.unsqueeze(0);
  std::vector<at::Tensor> norms;
  int bad_stage = -1;
  std::vector<int64_t> seen(static_cast<size_t>(S), 0);  // chunks of each device so far
  for (int c = 0; c < C; ++c) {
    const int d = device_of_[static_cast<size_t>(c)];
    const at::Tensor row = all[d].narrow(0, w * seen[static_cast<size_t>(d)]++, w);
    const auto count = static_cast<int64_t>(row[0].item<float>());
    for (int64_t i = 0; i < count; ++i) {
      norms.push_back(row[i + 1]);
      if (bad_stage < 0 && !std::isfinite(row[i + 1].item<float>())) bad_stage = c;
    }
  }
  const double total_norm = norms.empty() ? 0.0 : torch::stack(norms).norm(2).item<double>();
  if (!std::isfinite(total_norm))
    throw sim::NonFiniteError("non-finite parameter gradient at step " + std::to_string(step + 1) +
                              " (replica " + std::to_string(replica_) + ", stage " +
                              std::to_string(std::max(bad_stage, 0)) + ")");
  const double clip = setup_.optim.clip;
  if (clip > 0 && total_norm > clip) {
    const double coef = clip / (total_norm + 1e-6);
    for (Part& part : parts_)
      for (const auto& p : part.params)
        if (p.grad().defined()) p.grad().mul_(coef);
  }
  rep.grad_norm = total_norm;
}

}  // namespace slowpipe::dist
