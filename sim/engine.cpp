// PipelineEngine: replicas, stages, boundary channels, the step loop and the trace.
#include "sim/engine.h"

#include <dlfcn.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <stdexcept>
#include <utility>

#include "common/errors.h"
#include "compressors/channels/factory.h"
#include "config/optim_registry.h"
#include "models/torch/cuts.h"
#include "models/torch/model_registry.h"
#include "pipeline/schedule.h"
#include "sim/engine_parts.h"
#include "sim/internal/engine_replica.h"

namespace slowpipe::sim {
namespace {

// OpenBLAS (the BLAS of Debian's libtorch) keeps its own thread pool, sized to
// the machine, whatever at::set_num_threads says; its idle workers spin. Found
// at run time: a libtorch linked with another BLAS has no such symbols.
using BlasSetThreads = void (*)(int);

}  // namespace

void set_compute_threads(int threads) {
  at::set_num_threads(threads);
  if (auto* set =
          reinterpret_cast<BlasSetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) {
    set(threads);
  }
}

PipelineEngine::PipelineEngine(EngineSetup setup) : setup_(std::move(setup)) {
  validate(setup_.pipeline);
  const torch::Device device(setup_.device);
  if (device.is_cuda() && !torch::cuda::is_available()) {
    throw UsageError("run.device = " + setup_.device +
                     ", but this libtorch build has no CUDA device available");
  }
  cuda_ = device.is_cuda();
  const int D = setup_.pipeline.replicas;
  schedule_ = netmodel::make_schedule(setup_.pipeline.schedule, setup_.pipeline.stages,
                                      setup_.pipeline.microbatches, setup_.pipeline.virtual_stages);
  const int C = schedule_.chunks;  // model chunks; `stage` below is a chunk

  for (int r = 0; r < D; ++r) {
    auto rep = std::make_unique<Replica>();
    // Same seed for every replica: identical initial parameters.
    rep->model = models::build_model(setup_.model, setup_.data, setup_.seed);
    rep->model.compute_dtype = setup_.dtype == "bf16" ? at::kBFloat16 : at::kFloat;
    for (auto& b : rep->model.blocks) b->to(device);
    replicas_.push_back(std::move(rep));
  }
  const auto user_cuts = parse_int_list("pipeline.cuts", setup_.pipeline.cuts);
  cuts_ = models::resolve_cuts(replicas_[0]->model, C, user_cuts, setup_.pipeline.balance,
                               setup_.probe);
  order_ = netmodel::single_process_order(schedule_);

  for (int r = 0; r < D; ++r) {
    build_stages(*replicas_[r]);
    build_channels(*replicas_[r], r);
  }
  build_momentum_channels();
}

void PipelineEngine::build_stages(Replica& rep) {
  // Samples of one micro-batch of one replica (what each forward op computes).
  const int64_t mb = std::max<int64_t>(
      1, setup_.pipeline.batch_size /
             (static_cast<int64_t>(setup_.pipeline.replicas) * setup_.pipeline.microbatches));
  for (int s = 0; s < schedule_.chunks; ++s) {
    std::vector<at::Tensor> params;
    std::vector<models::ParamRole> roles;
    double flops = 0;
    for (size_t b = cuts_[s]; b < cuts_[s + 1]; ++b) {
      for (const auto& p : rep.model.blocks[b]->parameters()) params.push_back(p);
      for (const auto r : rep.model.blocks[b]->parameter_roles()) roles.push_back(r);
      flops += rep.model.blocks[b]->forward_flops_per_sample();
    }
    rep.stage_params.push_back(params);
    rep.optimizers.emplace_back(setup_.optim, params, roles);
    rep.flops_per_sample.push_back(flops);
    rep.forward_kernels.push_back(forward_kernels(rep.model, cuts_[s], cuts_[s + 1]));
    rep.chunk_work.push_back(chunk_work(rep.model, cuts_[s], cuts_[s + 1], mb));
  }
}

void PipelineEngine::build_channels(Replica& rep, int r) {
  const int C = schedule_.chunks, D = setup_.pipeline.replicas;
  for (int b = 0; b + 1 < C; ++b) {
    if (setup_.channel_factory) {
      rep.fw.push_back(setup_.channel_factory(ChannelRole::kForward, b, r));
      rep.bw.push_back(setup_.channel_factory(ChannelRole::kBackward, b, r));
    } else {
      const std::string name = "r" + std::to_string(r) + ".b" + std::to_string(b);
      auto pair = compressors::make_boundary(
          setup_.compress.fw_for(b), setup_.compress.bw_for(b),
          channel_context(setup_, name, static_cast<uint64_t>(r) * 4096 + b));
      rep.fw.push_back(std::move(pair.fw));
      rep.bw.push_back(std::move(pair.bw));
    }
  }
  if (D == 1) return;
  for (int s = 0; s < C; ++s) {
    if (setup_.channel_factory) {
      rep.grad.push_back(setup_.channel_factory(ChannelRole::kGradient, s, r));
    } else {
      const std::string name = "r" + std::to_string(r) + ".grad" + std::to_string(s);
      // Momentum exchange: gradients cross uncompressed during its warm-up only.
      const bool momentum = setup_.compress.grad_sync == compressors::GradSync::kMomentum;
      rep.grad.push_back(compressors::make_channel(
          momentum ? compressors::ChannelSpec() : setup_.compress.grad.resolved(),
          channel_context(setup_, name, static_cast<uint64_t>(r) * 4096 + 2048 + s)));
    }
  }
}

PipelineEngine::~PipelineEngine() = default;

models::Task PipelineEngine::task() const {
  return replicas_[0]->model.task;
}
const models::Model& PipelineEngine::model(int replica) const {
  return replicas_.at(replica)->model;
}
models::Model& PipelineEngine::model(int replica) {
  return replicas_.at(replica)->model;
}

std::vector<at::Tensor> PipelineEngine::optimizer_state(int replica) const {
  std::vector<at::Tensor> out;
  for (const auto& o : replicas_.at(replica)->optimizers) {
    for (auto& t : o.state_tensors()) out.push_back(t);
  }
  return out;
}

uint64_t PipelineEngine::channel_state_bytes() const {
  uint64_t n = 0;
  for (const auto& r : replicas_) {
    for (const auto& c : r->fw) n += c->state_bytes();
    for (const auto& c : r->bw) n += c->state_bytes();
    for (const auto& c : r->grad) n += c->state_bytes();
    for (const auto& c : r->momentum) n += c->state_bytes();
    for (const auto& c : r->momentum_server) n += c->state_bytes();
  }
  return n;
}

std::vector<std::string> PipelineEngine::fw_specs() const {
  std::vector<std::string> out;
  for (const auto& c : replicas_[0]->fw) out.push_back(c->spec());
  return out;
}

std::vector<std::string> PipelineEngine::bw_specs() const {
  std::vector<std::string> out;
  for (const auto& c : replicas_[0]->bw) out.push_back(c->spec());
  return out;
}

void PipelineEngine::set_epoch(int epoch) {
  for (auto& r : replicas_) {
    for (auto& c : r->fw) c->set_epoch(epoch);
    for (auto& c : r->bw) c->set_epoch(epoch);
    for (auto& c : r->grad) c->set_epoch(epoch);
    for (auto& c : r->momentum) c->set_epoch(epoch);
    for (auto& c : r->momentum_server) c->set_epoch(epoch);
  }
}

void PipelineEngine::warm_up(const models::Batch& batch, int passes) {
  const torch::Device device(setup_.device);
  const int64_t mb =
      batch.inputs.size(0) / (static_cast<int64_t>(replicas()) * setup_.pipeline.microbatches);
  for (int pass = 0; pass < passes; ++pass) {
    for (auto& rep : replicas_) {
      const at::Tensor tokens = batch.inputs.narrow(0, 0, mb).to(device);
      at::Tensor h = tokens;
      std::vector<at::Tensor> leaves;
      for (int s = 0; s < stages(); ++s) {
        if (s > 0) {
          h = h.detach().requires_grad_(true);
          leaves.push_back(h);
        }
        h = stage_forward(*rep, s, h, tokens);
      }
      models::loss(task(), h, batch.targets.narrow(0, 0, mb).to(device)).backward();
      for (auto& o : rep->optimizers) o.zero_grad();
    }
  }
  if (cuda_) torch::cuda::synchronize();
}

at::Tensor PipelineEngine::stage_forward(Replica& r, int stage, const at::Tensor& x,
                                         const at::Tensor& inputs) {
  // With a model's boundary map, what enters and leaves a stage is what crosses a cut.
  return models::forward_stage(r.model, cuts_[stage], cuts_[stage + 1], x, inputs);
}

// One replica's tensors in flight during a step, per (chunk, micro-batch).
struct PipelineEngine::StepWork {
  int replica = 0;
  int64_t step = 0;
  int64_t shard = 0, mb = 0;  // samples per replica shard and per micro-batch
  const models::Batch* batch = nullptr;
  std::vector<std::vector<at::Tensor>> inputs;    // the chunk's input leaf
  std::vector<std::vector<at::Tensor>> outputs;   // its output (the scaled loss on the last)
  std::vector<std::vector<at::Tensor>> grads_in;  // the gradient of the output
  // Split backward: the input pass's measured wall and thread CPU seconds.
  std::vector<std::vector<std::pair<double, double>>> input_pass;
  double loss_sum = 0;
};

double PipelineEngine::run_replica(const models::Batch& batch, int64_t step, int r,
                                   StepResult& result) {
  const int C = stages(), D = replicas(), M = setup_.pipeline.microbatches;
  StepWork w;
  w.replica = r;
  w.step = step;
  w.shard = batch.inputs.size(0) / D;
  w.mb = w.shard / M;
  w.batch = &batch;
  for (auto* v : {&w.inputs, &w.outputs, &w.grads_in}) {
    v->assign(C, std::vector<at::Tensor>(M));
  }
  w.input_pass.assign(C, std::vector<std::pair<double, double>>(M));
  for (auto& o : replicas_[r]->optimizers) o.zero_grad();
  for (const netmodel::ScheduledOp& op : order_) {
    switch (op.pass) {
      case netmodel::Pass::kForward:
        run_forward(w, op, result);
        break;
      case netmodel::Pass::kBackward:
      case netmodel::Pass::kBackwardInput:
        run_backward(w, op, result);
        break;
      case netmodel::Pass::kBackwardWeight:
        run_weight_backward(w, op, result);
        break;
    }
  }
  return w.loss_sum;
}

StepResult PipelineEngine::train_step(const models::Batch& batch, int64_t step,
                                      int64_t total_steps) {
  const int C = stages();
  const int D = replicas();
  const int M = setup_.pipeline.microbatches;
  const int64_t B = batch.inputs.size(0);
  if (B % (static_cast<int64_t>(D) * M) != 0) {
    throw UsageError("batch of " + std::to_string(B) + " samples does not split into " +
                     std::to_string(D) + " replicas x " + std::to_string(M) + " micro-batches");
  }
  StepResult result;
  result.samples = B;
  result.fw.resize(C - 1);
  result.bw.resize(C - 1);
  result.trace.stages = schedule_.devices;
  result.trace.chunks = C;
  result.trace.microbatches = M;
  result.trace.replicas = D;
  result.trace.schedule = setup_.pipeline.schedule;
  // Thread CPU time is an op's whole CPU time only when one thread computes.
  result.trace.thread_cpu = !cuda_ && at::get_num_threads() == 1 && blas_threads() == 1;

  result.trace.chunk_work = replicas_[0]->chunk_work;
  double loss_sum = 0;
  for (int r = 0; r < D; ++r) loss_sum += run_replica(batch, step, r, result);
  result.loss = loss_sum / D;
  if (momentum_exchange_active(step)) {
    exchange_momentum(result, step, total_steps);
  } else {
    if (D > 1) sync_gradients(result);
    step_optimizers(result, step, total_steps);
  }
  finish_means(result.fw);
  finish_means(result.bw);
  finish_means(result.grad);
  for (const auto& op : result.trace.ops) result.compute_s += op.compute_s;
  return result;
}

at::Tensor PipelineEngine::microbatch_ids(const StepWork& w, int m) const {
  const int64_t begin = w.replica * w.shard + m * w.mb;
  // Channels key per-sample state by the id within the replica's shard.
  return setup_.shard_samples > 0
             ? w.batch->ids.narrow(0, begin, w.mb) - w.replica * setup_.shard_samples
             : w.batch->ids.narrow(0, begin, w.mb);
}

void PipelineEngine::sync_device() const {
  if (cuda_) torch::cuda::synchronize();
}

OpSite PipelineEngine::site(const StepWork& w, int chunk, int microbatch, int peer) const {
  return {schedule_.device_of[chunk], chunk, microbatch, w.replica, peer};
}

void PipelineEngine::run_forward(StepWork& w, const netmodel::ScheduledOp& op, StepResult& result) {
  const int C = stages(), c = op.chunk, m = op.microbatch, r = w.replica;
  Replica& rep = *replicas_[r];
  const torch::Device device(setup_.device);
  const int64_t begin = r * w.shard + m * w.mb;
  const at::Tensor tokens = w.batch->inputs.narrow(0, begin, w.mb).to(device);
  at::Tensor x = c == 0 ? tokens : w.inputs[c][m];
  sync_device();
  const OpTimer timer;
  at::Tensor y = stage_forward(rep, c, x, tokens);
  if (c == C - 1) {
    const at::Tensor targets = w.batch->targets.narrow(0, begin, w.mb).to(device);
    y = models::loss(task(), y, targets) * (static_cast<double>(w.mb) / w.shard);
  }
  sync_device();
  result.trace.ops.push_back(
      compute_op(netmodel::OpKind::kForward, site(w, c, m), timer, rep.flops_per_sample[c] * w.mb));
  result.trace.ops.back().kernels = rep.forward_kernels[c];
  w.outputs[c][m] = y;
  if (c == C - 1) return;
  if (!all_finite(y)) {
    throw NonFiniteError("non-finite activation at " + where(w.step, r, m) + ": stage " +
                         std::to_string(c) + " output, forward across boundary " +
                         std::to_string(c));
  }
  const int to = schedule_.device_of[c + 1];
  if (to == schedule_.device_of[c]) {  // both chunks on one device: no message
    w.inputs[c + 1][m] = y.detach().requires_grad_(true);
    return;
  }
  compressors::TransferStats st;
  const at::Tensor received = rep.fw[c]->transfer(y.detach(), microbatch_ids(w, m), &st);
  st.bytes +=
      models::side_bytes(rep.model, cuts_[c + 1], tokens);  // token ids a boundary map sends
  w.inputs[c + 1][m] = received.detach().requires_grad_(true);
  result.trace.ops.push_back(
      message_op(netmodel::OpKind::kSendActivation, site(w, c, m, to), y, st, result.fw[c]));
}

void PipelineEngine::run_backward(StepWork& w, const netmodel::ScheduledOp& op,
                                  StepResult& result) {
  const int C = stages(), c = op.chunk, m = op.microbatch, r = w.replica;
  Replica& rep = *replicas_[r];
  const bool split = op.pass == netmodel::Pass::kBackwardInput;
  sync_device();
  const OpTimer timer;
  at::Tensor& out = w.outputs[c][m];
  if (c == C - 1) {
    const double loss = out.item<double>();
    if (!std::isfinite(loss)) {
      throw NonFiniteError("non-finite loss at " + where(w.step, r, m) + " (last stage " +
                           std::to_string(c) + ")");
    }
    w.loss_sum += loss;
  }
  const at::Tensor grad_out = c == C - 1 ? at::Tensor() : w.grads_in[c][m];
  at::Tensor input_grad;
  if (!split) {
    out.backward(grad_out);
    if (c > 0) input_grad = w.inputs[c][m].grad();
  } else if (c > 0) {
    // The input gradient only; the graph stays for the weight pass.
    input_grad = torch::autograd::grad({out}, {w.inputs[c][m]},
                                       {grad_out.defined() ? grad_out : at::ones_like(out)},
                                       /*retain_graph=*/true)[0];
  }
  sync_device();
  // A split backward's input pass: about one forward's FLOPs (docs/schedules.md).
  const double flops = (split ? 1.0 : 2.0) * rep.flops_per_sample[c] * w.mb;
  result.trace.ops.push_back(
      compute_op(split ? netmodel::OpKind::kBackwardInput : netmodel::OpKind::kBackward,
                 site(w, c, m), timer, flops));
  result.trace.ops.back().kernels = (split ? 1 : 2) * rep.forward_kernels[c];
  if (split) {
    w.input_pass[c][m] = {result.trace.ops.back().compute_s, result.trace.ops.back().thread_cpu_s};
  }
  if (c > 0 && !all_finite(input_grad)) {
    throw NonFiniteError("non-finite activation-gradient at " + where(w.step, r, m) + ": stage " +
                         std::to_string(c) + " input, backward across boundary " +
                         std::to_string(c - 1));
  }
  if (c > 0) {
    const int to = schedule_.device_of[c - 1];
    if (to == schedule_.device_of[c]) {
      w.grads_in[c - 1][m] = input_grad;
    } else {
      compressors::TransferStats st;
      w.grads_in[c - 1][m] = rep.bw[c - 1]->transfer(input_grad, microbatch_ids(w, m), &st);
      const int64_t begin = r * w.shard + m * w.mb;
      st.bytes += models::side_bytes(rep.model, cuts_[c], w.batch->inputs.narrow(0, begin, w.mb));
      result.trace.ops.push_back(message_op(netmodel::OpKind::kSendGradient, site(w, c, m, to),
                                            input_grad, st, result.bw[c - 1]));
    }
  }
  if (!split) {  // a split backward keeps them for its weight pass
    out = at::Tensor();
    w.inputs[c][m] = at::Tensor();
    w.grads_in[c][m] = at::Tensor();
  }
}

void PipelineEngine::run_weight_backward(StepWork& w, const netmodel::ScheduledOp& op,
                                         StepResult& result) {
  const int C = stages(), c = op.chunk, m = op.microbatch;
  Replica& rep = *replicas_[w.replica];
  sync_device();
  const OpTimer timer;
  const at::Tensor& grad_out = w.grads_in[c][m];
  std::vector<at::Tensor> params;
  for (const auto& p : rep.stage_params[c]) {
    if (p.requires_grad()) params.push_back(p);
  }
  // A learned bottleneck's parameters this chunk reads at its entry (owned by
  // the chunk before): their gradient from this side arrives here too.
  if (const models::BoundaryMap* map = c > 0 ? models::boundary_at(rep.model, cuts_[c]) : nullptr) {
    for (const auto& p : map->parameters()) {
      if (p.requires_grad()) params.push_back(p);
    }
  }
  torch::autograd::backward({w.outputs[c][m]}, {c == C - 1 ? at::Tensor() : grad_out},
                            /*retain_graph=*/false,
                            /*create_graph=*/false, params);
  sync_device();
  netmodel::TraceOp t = compute_op(netmodel::OpKind::kBackwardWeight, site(w, c, m), timer,
                                   rep.flops_per_sample[c] * w.mb);
  t.kernels = rep.forward_kernels[c];
  // libtorch walks the chunk's chain of activation gradients again to reach
  // the parameters: what the input pass already measured is not counted twice.
  if (c > 0) {
    t.compute_s = std::max(0.0, t.compute_s - w.input_pass[c][m].first);
    t.thread_cpu_s = std::max(0.0, t.thread_cpu_s - w.input_pass[c][m].second);
  }
  result.trace.ops.push_back(t);
  w.outputs[c][m] = at::Tensor();
  w.inputs[c][m] = at::Tensor();
  w.grads_in[c][m] = at::Tensor();
}

double PipelineEngine::clip_replica(int r, int64_t step) {
  Replica& rep = *replicas_[r];
  std::vector<at::Tensor> all;
  for (const auto& p : rep.stage_params) all.insert(all.end(), p.begin(), p.end());
  const double norm = clip_global_norm(all, setup_.optim.clip);
  if (!std::isfinite(norm)) {
    int bad = 0;
    for (int s = 0; s < stages() && bad == 0; ++s) {
      for (const auto& p : rep.stage_params[s]) {
        if (p.grad().defined() && !all_finite(p.grad())) bad = s + 1;
      }
    }
    throw NonFiniteError("non-finite parameter gradient at step " + std::to_string(step + 1) +
                         " (replica " + std::to_string(r) + ", stage " +
                         std::to_string(std::max(bad - 1, 0)) + ")");
  }
  return norm;
}

void PipelineEngine::step_optimizers(StepResult& result, int64_t step, int64_t total_steps) {
  const int C = stages();
  result.lr = config::learning_rate(setup_.optim, step, total_steps);
  for (int r = 0; r < replicas(); ++r) {
    Replica& rep = *replicas_[r];
    const double norm = clip_replica(r, step);
    if (r == 0) result.grad_norm = norm;
    for (int s = 0; s < C; ++s) {
      sync_device();
      const OpTimer timer;
      rep.optimizers[s].set_lr(result.lr);
      rep.optimizers[s].step();
      sync_device();
      netmodel::TraceOp op =
          compute_op(netmodel::OpKind::kOptimizer, OpSite{schedule_.device_of[s], s, -1, r}, timer,
                     rep.optimizers[s].flops_per_step());
      op.memory_bytes = rep.optimizers[s].memory_bytes_per_step();
      op.kernels = static_cast<int>(rep.stage_params[s].size());
      result.trace.ops.push_back(op);
    }
  }
}

void PipelineEngine::sync_gradients(StepResult& result) {
  const int S = stages();
  const int D = replicas();
  result.grad.resize(S);
  for (int s = 0; s < S; ++s) {
    at::Tensor sum;
    for (int r = 0; r < D; ++r) {
      Replica& rep = *replicas_[r];
      const at::Tensor g = flat_gradient(rep.stage_params[s], s, r);
      compressors::TransferStats st;
      const at::Tensor received = rep.grad[s]->transfer(g, at::Tensor(), &st);
      sum = sum.defined() ? sum + received : received.clone();
      result.trace.ops.push_back(message_op(netmodel::OpKind::kAllReduce,
                                            OpSite{schedule_.device_of[s], s, -1, r}, g, st,
                                            result.grad[s]));
    }
    const at::Tensor mean = sum / D;
    for (int r = 0; r < D; ++r) set_gradients(replicas_[r]->stage_params[s], mean);
  }
}

EvalResult PipelineEngine::evaluate(const models::Batch& batch, bool compressed) {
  torch::NoGradGuard no_grad;
  Replica& rep = *replicas_[0];
  // Dropout off while evaluating (and no draw from the random stream).
  rep.model.train(false);
  struct TrainAgain {
    const models::Model& m;
    ~TrainAgain() { m.train(true); }
  } train_again{rep.model};
  const torch::Device device(setup_.device);
  const at::Tensor tokens = batch.inputs.to(device);
  at::Tensor h = tokens;
  for (int s = 0; s < stages(); ++s) {
    h = stage_forward(rep, s, h, tokens);
    if (s + 1 < stages() && compressed) h = rep.fw[s]->infer(h, nullptr);
  }
  const at::Tensor targets = batch.targets.to(device);
  EvalResult out;
  out.items = targets.numel();
  out.loss_sum = models::loss(task(), h, targets).item<double>() * static_cast<double>(out.items);
  out.correct = models::correct(task(), h, targets);
  return out;
}

}  // namespace slowpipe::sim
