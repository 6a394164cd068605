// DistEngine's part of one step on this rank: its stage's ops in its schedule
// order with real messages, the data-parallel gradient exchange, the global
// gradient norm across the replica's stages, and the optimizer step.
#include <torch/cuda.h>
#include <torch/torch.h>

#include <cmath>

#include "common/errors.h"
#include "compressors/channels/rel_error.h"
#include "config/optim_registry.h"
#include "distributed/dist_engine.h"
#include "sim/engine_parts.h"

namespace slowpipe::dist {
namespace {

using netmodel::OpKind;

int act_tag(int m) {
  return 2 * m;
}
int grad_tag(int m) {
  return 2 * m + 1;
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
  const auto boundaries = static_cast<size_t>(layout_.stages - 1);
  RankReport rep;
  rep.fw.resize(boundaries);
  rep.bw.resize(boundaries);
  rep.fw_wire.assign(boundaries, 0);
  rep.bw_wire.assign(boundaries, 0);
  optimizer_->zero_grad();
  pipeline_ops(batch, step, rep);
  comm_->wait_sends();
  if (momentum_active(step)) {
    exchange_momentum(step, total, rep);
  } else {
    if (layout_.replicas > 1) sync_gradients(rep);
    clip_and_update(step, total, rep);
  }
  // The state one process would hold: every half in use here (not the
  // shadows, nor the other replicas' server receivers).
  for (auto* ch : {fw_out_.get(), bw_in_.get(), fw_in_.get(), bw_out_.get()})
    if (ch) rep.channel_state_bytes += ch->state_bytes();
  for (const auto& ch : grad_) rep.channel_state_bytes += ch->state_bytes();
  for (const auto* list : {&m_workers_, &m_inbound_})
    for (const auto& ch : *list)
      if (ch) rep.channel_state_bytes += ch->state_bytes();
  if (!m_servers_.empty())
    rep.channel_state_bytes += m_servers_[static_cast<size_t>(replica_)]->state_bytes();
  return rep;
}

// A step's view of its batch from this rank: which rows micro-batch m is, the
// ids its channels key per-sample state by, and the tensors a forward keeps
// for its backward.
struct DistEngine::StepSlices {
  const models::Batch& batch;
  int64_t step = 0;
  int64_t shard = 0, mb = 0;  // samples per replica, per micro-batch
  int replica = 0;
  int64_t shard_samples = 0;  // EngineSetup::shard_samples
  torch::Device device;
  std::vector<at::Tensor> inputs, outputs;
  // A split backward (zb-h1): the gradient each input pass received, kept for
  // the weight pass, and the input pass's measured seconds (wall, thread CPU).
  std::vector<at::Tensor> grads_in;
  std::vector<std::pair<double, double>> input_pass;

  int64_t begin(int m) const { return replica * shard + m * mb; }
  // Channels key per-sample state by the id within the replica's shard.
  at::Tensor ids(int m) const {
    const at::Tensor all = batch.ids.narrow(0, begin(m), mb);
    return shard_samples > 0 ? all - replica * shard_samples : all;
  }
  void sync() const {
    if (device.is_cuda()) torch::cuda::synchronize();
  }
};

void DistEngine::pipeline_ops(const models::Batch& batch, int64_t step, RankReport& rep) {
  const int D = layout_.replicas, M = setup_.pipeline.microbatches;
  const int64_t B = batch.inputs.size(0);
  if (B % (static_cast<int64_t>(D) * M) != 0)
    throw UsageError("batch of " + std::to_string(B) + " samples does not split into " +
                     std::to_string(D) + " replicas x " + std::to_string(M) + " micro-batches");
  const int64_t shard = B / D;
  const auto Mz = static_cast<size_t>(M);
  StepSlices c{batch,
               step,
               shard,
               shard / M,
               replica_,
               setup_.shard_samples,
               torch::Device(setup_.device),
               std::vector<at::Tensor>(Mz),
               std::vector<at::Tensor>(Mz),
               std::vector<at::Tensor>(Mz),
               std::vector<std::pair<double, double>>(Mz)};
  prefetch_messages();
  for (const netmodel::ScheduledOp& op : my_ops_) {
    if (op.pass == netmodel::Pass::kForward) {
      forward_op(c, op.microbatch, rep);
    } else if (op.pass == netmodel::Pass::kBackwardWeight) {
      weight_op(c, op.microbatch, rep);
    } else {
      backward_op(c, op.microbatch, op.pass == netmodel::Pass::kBackwardInput, rep);
    }
  }
  comm_->end_prefetch();
}

// Every message this stage will receive, in the order its ops consume them.
void DistEngine::prefetch_messages() {
  const int S = layout_.stages, r = replica_, s = stage_;
  std::vector<int> from_up, from_down;
  for (const netmodel::ScheduledOp& op : my_ops_) {
    if (op.pass == netmodel::Pass::kForward && s > 0) from_up.push_back(act_tag(op.microbatch));
    if (op.pass != netmodel::Pass::kForward && op.pass != netmodel::Pass::kBackwardWeight &&
        s < S - 1)
      from_down.push_back(grad_tag(op.microbatch));
  }
  if (!from_up.empty()) comm_->prefetch(layout_.rank(r, s - 1), from_up);
  if (!from_down.empty()) comm_->prefetch(layout_.rank(r, s + 1), from_down);
}

// Micro-batch m's forward: take and decode the activation (or the tokens on
// stage 0), run the stage (and the loss on the last), send the output on.
void DistEngine::forward_op(StepSlices& c, int m, RankReport& rep) {
  const int S = layout_.stages, r = replica_, s = stage_;
  const auto mi = static_cast<size_t>(m);
  const at::Tensor ids = c.ids(m);
  const at::Tensor tokens = c.batch.inputs.narrow(0, c.begin(m), c.mb).to(c.device);
  at::Tensor x;
  if (s == 0) {
    x = tokens;
  } else {
    Dims dims;
    const Bytes msg = comm_->take(layout_.rank(r, s - 1), act_tag(m), &dims);
    compressors::TransferStats st;
    const at::Tensor got = fw_in_->receive(msg, dims, ids, &st);
    rep.fw[static_cast<size_t>(s - 1)].decode_s += st.decode_s;
    rep.decodes.push_back({OpKind::kSendActivation, s - 1, m, st.decode_s});
    x = got.to(c.device).detach().requires_grad_(true);
    c.inputs[mi] = x;
  }
  c.sync();
  const sim::OpTimer timer;
  at::Tensor y = stage_forward(x, tokens);
  if (s == S - 1) {
    const at::Tensor targets = c.batch.targets.narrow(0, c.begin(m), c.mb).to(c.device);
    y = models::loss(task(), y, targets) * (static_cast<double>(c.mb) / c.shard);
  }
  c.sync();
  rep.ops.push_back(
      sim::compute_op(OpKind::kForward, {s, s, m, r}, timer, flops_per_sample_ * c.mb));
  rep.ops.back().kernels = forward_kernels_;
  c.outputs[mi] = y;
  if (s == S - 1) return;
  if (!sim::all_finite(y))
    throw sim::NonFiniteError("non-finite activation at " + sim::where(c.step, r, m) + ": stage " +
                              std::to_string(s) + " output, forward across boundary " +
                              std::to_string(s));
  compressors::TransferStats st;
  Bytes msg;
  fw_out_->send(y.detach(), ids, msg, &st);
  rep.errors.push_back({OpKind::kSendActivation, s, m, sent_error(*fw_shadow_, y, msg, ids)});
  st.bytes +=
      models::side_bytes(model_, cuts_[s + 1], tokens);  // token ids a boundary map sends (counted)
  rep.fw_wire[static_cast<size_t>(s)] +=
      comm_->send(msg, dims_of(y), layout_.rank(r, s + 1), act_tag(m));
  rep.ops.push_back(sim::message_op(OpKind::kSendActivation, {s, s, m, r, s + 1}, y, st,
                                    rep.fw[static_cast<size_t>(s)]));
}

// Micro-batch m's backward: take and decode the gradient (the loss on the last
// stage), run the backward, send the input's gradient back. `split`: the
// input pass of a split backward (as sim/engine.cpp's run_backward): only the
// input's gradient, the graph kept for weight_op.
void DistEngine::backward_op(StepSlices& c, int m, bool split, RankReport& rep) {
  const int S = layout_.stages, r = replica_, s = stage_;
  const auto mi = static_cast<size_t>(m);
  const at::Tensor ids = c.ids(m);
  at::Tensor g;
  if (s < S - 1) {
    Dims dims;
    const Bytes msg = comm_->take(layout_.rank(r, s + 1), grad_tag(m), &dims);
    compressors::TransferStats st;
    g = bw_in_->receive(msg, dims, ids, &st).to(c.device);
    rep.bw[static_cast<size_t>(s)].decode_s += st.decode_s;
    rep.decodes.push_back({OpKind::kSendGradient, s + 1, m, st.decode_s});
  }
  c.sync();
  const sim::OpTimer timer;
  if (s == S - 1) {
    const double loss = c.outputs[mi].item<double>();
    if (!std::isfinite(loss))
      throw sim::NonFiniteError("non-finite loss at " + sim::where(c.step, r, m) + " (last stage " +
                                std::to_string(s) + ")");
    rep.losses.push_back(loss);
  }
  at::Tensor grad;  // of the stage's input
  if (!split) {
    c.outputs[mi].backward(g);
    if (s > 0) grad = c.inputs[mi].grad();
  } else if (s > 0) {
    grad = torch::autograd::grad({c.outputs[mi]}, {c.inputs[mi]},
                                 {g.defined() ? g : at::ones_like(c.outputs[mi])},
                                 /*retain_graph=*/true)[0];
  }
  c.sync();
  // A split backward's input pass: about one forward's FLOPs (docs/schedules.md).
  rep.ops.push_back(sim::compute_op(split ? OpKind::kBackwardInput : OpKind::kBackward,
                                    {s, s, m, r}, timer,
                                    (split ? 1.0 : 2.0) * flops_per_sample_ * c.mb));
  rep.ops.back().kernels = (split ? 1 : 2) * forward_kernels_;
  if (split) {
    c.input_pass[mi] = {rep.ops.back().compute_s, rep.ops.back().thread_cpu_s};
    c.grads_in[mi] = g;
  }
  if (s > 0) {
    if (!sim::all_finite(grad))
      throw sim::NonFiniteError("non-finite activation-gradient at " + sim::where(c.step, r, m) +
                                ": stage " + std::to_string(s) +
                                " input, backward across boundary " + std::to_string(s - 1));
    compressors::TransferStats st;
    Bytes msg;
    bw_out_->send(grad, ids, msg, &st);
    rep.errors.push_back(
        {OpKind::kSendGradient, s, m, bw_shadow_ ? sent_error(*bw_shadow_, grad, msg, ids) : NAN});
    st.bytes += models::side_bytes(model_, cuts_[s], c.batch.inputs.narrow(0, c.begin(m), c.mb));
    rep.bw_wire[static_cast<size_t>(s - 1)] +=
        comm_->send(msg, dims_of(grad), layout_.rank(r, s - 1), grad_tag(m));
    rep.ops.push_back(sim::message_op(OpKind::kSendGradient, {s, s, m, r, s - 1}, grad, st,
                                      rep.bw[static_cast<size_t>(s - 1)]));
  }
  if (split) return;  // the weight pass needs them
  c.outputs[mi] = at::Tensor();
  c.inputs[mi] = at::Tensor();
}

// The weight pass of a split backward: the stage's parameter gradients from
// the kept graph and gradient (as sim/engine.cpp's run_weight_backward).
void DistEngine::weight_op(StepSlices& c, int m, RankReport& rep) {
  const int S = layout_.stages, r = replica_, s = stage_;
  const auto mi = static_cast<size_t>(m);
  c.sync();
  const sim::OpTimer timer;
  std::vector<at::Tensor> params;
  for (const auto& p : params_)
    if (p.requires_grad()) params.push_back(p);
  torch::autograd::backward({c.outputs[mi]}, {s == S - 1 ? at::Tensor() : c.grads_in[mi]},
                            /*retain_graph=*/false, /*create_graph=*/false, params);
  c.sync();
  netmodel::TraceOp t =
      sim::compute_op(OpKind::kBackwardWeight, {s, s, m, r}, timer, flops_per_sample_ * c.mb);
  t.kernels = forward_kernels_;
  // libtorch walks the chain of activation gradients again to reach the
  // parameters: what the input pass measured is not counted twice.
  if (s > 0) {
    t.compute_s = std::max(0.0, t.compute_s - c.input_pass[mi].first);
    t.thread_cpu_s = std::max(0.0, t.thread_cpu_s - c.input_pass[mi].second);
  }
  rep.ops.push_back(t);
  c.outputs[mi] = at::Tensor();
  c.inputs[mi] = at::Tensor();
  c.grads_in[mi] = at::Tensor();
}

void DistEngine::sync_gradients(RankReport& rep) {
  const int D = layout_.replicas, r = replica_, s = stage_;
  const at::Tensor g = sim::flat_gradient(params_, s, r);
  compressors::TransferStats st;
  at::Tensor sum;
  Bytes msg;
  if (grad_plain_) {
    // fp32 through c10d's all-reduce; accounted as the `none` message it is.
    sum = g.to(at::kCPU, at::kFloat).contiguous().clone();
    comm_->allreduce_sum(sum);
    st.bytes = static_cast<uint64_t>(sum.nbytes());
    rep.grad_wire += st.bytes;
  } else {
    // Every replica's message to every replica; each decodes all of them in
    // replica order with its receiver copy of that sender's channel.
    grad_[static_cast<size_t>(r)]->send(g, at::Tensor(), msg, &st);
    const std::vector<Bytes> all = comm_->allgather(msg);
    rep.grad_wire += msg.size() + sizeof(int64_t);
    const compressors::Shape shape = {1, g.size(1)};
    for (int q = 0; q < D; ++q) {
      const at::Tensor got = grad_[static_cast<size_t>(q)]->receive(
          all[static_cast<size_t>(q)], shape, at::Tensor(), q == r ? &st : nullptr);
      if (q == r) st.rel_error = compressors::transfer_rel_error(g, got);
      sum = sum.defined() ? sum + got : got.clone();
    }
  }
  rep.ops.push_back(sim::message_op(OpKind::kAllReduce, {s, s, -1, r}, g, st, rep.grad));
  sim::set_gradients(params_, (sum / D).to(g.device()));
}

void DistEngine::clip_and_update(int64_t step, int64_t total, RankReport& rep) {
  clip_gradients(step, rep);
  const torch::Device device(setup_.device);
  if (device.is_cuda()) torch::cuda::synchronize();
  const sim::OpTimer timer;
  optimizer_->set_lr(config::learning_rate(setup_.optim, step, total));
  optimizer_->step();
  rep.ops.push_back(optimizer_op(timer));
}

netmodel::TraceOp DistEngine::optimizer_op(const sim::OpTimer& timer) const {
  if (torch::Device(setup_.device).is_cuda()) torch::cuda::synchronize();
  netmodel::TraceOp op = sim::compute_op(OpKind::kOptimizer, {stage_, stage_, -1, replica_}, timer,
                                         optimizer_->flops_per_step());
  op.memory_bytes = optimizer_->memory_bytes_per_step();
  op.kernels = static_cast<int>(params_.size());
  return op;
}

void DistEngine::clip_gradients(int64_t step, RankReport& rep) {
  // The global norm over every stage of this replica, as clip_global_norm
  // computes it in one process: the per-tensor norms of all stages, stacked in
  // stage order. Row of the exchange: [count, norms..., padding].
  const int S = layout_.stages;
  size_t widest = 0;
  for (size_t n : params_per_stage_) widest = std::max(widest, n);
  at::Tensor mine = at::zeros({static_cast<int64_t>(widest) + 1}, at::kFloat);
  std::vector<at::Tensor> own;
  for (const auto& p : params_)
    if (p.grad().defined()) own.push_back(p.grad().norm(2));
  mine[0] = static_cast<float>(own.size());
  for (size_t i = 0; i < own.size(); ++i) mine[static_cast<int64_t>(i) + 1] = own[i].to(at::kCPU);
  const at::Tensor all = S > 1 ? comm_->allgather_replica(mine) : mine.unsqueeze(0);
  std::vector<at::Tensor> norms;
  int bad_stage = -1;
  for (int q = 0; q < S; ++q) {
    const auto count = static_cast<int64_t>(all[q][0].item<float>());
    for (int64_t i = 0; i < count; ++i) {
      norms.push_back(all[q][i + 1]);
      if (bad_stage < 0 && !std::isfinite(all[q][i + 1].item<float>())) bad_stage = q;
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
    for (const auto& p : params_)
      if (p.grad().defined()) p.grad().mul_(coef);
  }
  rep.grad_norm = total_norm;
}

}  // namespace slowpipe::dist
