// PipelineEngine: replicas, stages, boundary channels, the step loop and the trace.
#include "sim/engine.h"

#include <dlfcn.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <stdexcept>

#include "common/errors.h"
#include "compressors/factory.h"
#include "models/cuts.h"
#include "models/registry.h"
#include "netmodel/schedule.h"
#include "sim/engine_parts.h"
#include "sim/engine_replica.h"

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
  const int S = setup_.pipeline.stages;
  const int D = setup_.pipeline.replicas;

  for (int r = 0; r < D; ++r) {
    auto rep = std::make_unique<Replica>();
    // Same seed for every replica: identical initial parameters.
    rep->model = models::build_model(setup_.model, setup_.data, setup_.seed);
    for (auto& b : rep->model.blocks) b->to(device);
    replicas_.push_back(std::move(rep));
  }
  const auto user_cuts = parse_int_list("pipeline.cuts", setup_.pipeline.cuts);
  cuts_ = models::resolve_cuts(replicas_[0]->model, S, user_cuts, setup_.pipeline.balance,
                               setup_.probe);
  order_ = global_order(
      netmodel::make_schedule(setup_.pipeline.schedule, S, setup_.pipeline.microbatches),
      setup_.pipeline.microbatches);

  for (int r = 0; r < D; ++r) {
    Replica& rep = *replicas_[r];
    for (int s = 0; s < S; ++s) {
      std::vector<at::Tensor> params;
      double flops = 0;
      for (size_t b = cuts_[s]; b < cuts_[s + 1]; ++b) {
        for (const auto& p : rep.model.blocks[b]->parameters()) params.push_back(p);
        flops += rep.model.blocks[b]->forward_flops_per_sample();
      }
      rep.stage_params.push_back(params);
      rep.optimizers.emplace_back(setup_.optim, params);
      rep.flops_per_sample.push_back(flops);
    }
    for (int b = 0; b + 1 < S; ++b) {
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
    if (D > 1) {
      for (int s = 0; s < S; ++s) {
        if (setup_.channel_factory) {
          rep.grad.push_back(setup_.channel_factory(ChannelRole::kGradient, s, r));
        } else {
          const std::string name = "r" + std::to_string(r) + ".grad" + std::to_string(s);
          rep.grad.push_back(compressors::make_channel(
              compressors::gradient_spec(setup_.compress.grad),
              channel_context(setup_, name, static_cast<uint64_t>(r) * 4096 + 2048 + s)));
        }
      }
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
  }
}

void PipelineEngine::warm_up(const models::Batch& batch, int passes) {
  const torch::Device device(setup_.device);
  const int64_t mb =
      batch.inputs.size(0) / (static_cast<int64_t>(replicas()) * setup_.pipeline.microbatches);
  for (int pass = 0; pass < passes; ++pass) {
    for (auto& rep : replicas_) {
      at::Tensor h = batch.inputs.narrow(0, 0, mb).to(device);
      std::vector<at::Tensor> leaves;
      for (int s = 0; s < stages(); ++s) {
        if (s > 0) {
          h = h.detach().requires_grad_(true);
          leaves.push_back(h);
        }
        h = stage_forward(*rep, s, h);
      }
      models::loss(task(), h, batch.targets.narrow(0, 0, mb).to(device)).backward();
      for (auto& o : rep->optimizers) o.zero_grad();
    }
  }
  if (cuda_) torch::cuda::synchronize();
}

at::Tensor PipelineEngine::stage_forward(Replica& r, int stage, const at::Tensor& x) {
  at::Tensor h = x;
  for (size_t b = cuts_[stage]; b < cuts_[stage + 1]; ++b) h = r.model.blocks[b]->forward(h);
  return h;
}

StepResult PipelineEngine::train_step(const models::Batch& batch, int64_t step,
                                      int64_t total_steps) {
  const int S = stages();
  const int D = replicas();
  const int M = setup_.pipeline.microbatches;
  const int64_t B = batch.inputs.size(0);
  if (B % (static_cast<int64_t>(D) * M) != 0) {
    throw UsageError("batch of " + std::to_string(B) + " samples does not split into " +
                     std::to_string(D) + " replicas x " + std::to_string(M) + " micro-batches");
  }
  const int64_t shard = B / D;
  const int64_t mb = shard / M;
  const torch::Device device(setup_.device);
  const auto sync = [this] {
    if (cuda_) torch::cuda::synchronize();
  };

  StepResult result;
  result.samples = B;
  result.fw.resize(S - 1);
  result.bw.resize(S - 1);
  result.trace.stages = S;
  result.trace.microbatches = M;
  result.trace.replicas = D;
  result.trace.schedule = setup_.pipeline.schedule;
  // Thread CPU time is an op's whole CPU time only when one thread computes.
  result.trace.thread_cpu = !cuda_ && at::get_num_threads() == 1 && blas_threads() == 1;

  double loss_sum = 0;
  for (int r = 0; r < D; ++r) {
    Replica& rep = *replicas_[r];
    for (auto& o : rep.optimizers) o.zero_grad();
    // Per (stage, micro-batch): the stage's input leaf and its output (loss on the last stage).
    std::vector<std::vector<at::Tensor>> inputs(S, std::vector<at::Tensor>(M));
    std::vector<std::vector<at::Tensor>> outputs(S, std::vector<at::Tensor>(M));
    std::vector<std::vector<at::Tensor>> grads_in(S, std::vector<at::Tensor>(M));
    for (const PipelineOp& op : order_) {
      const int s = op.stage;
      const int m = op.microbatch;
      const int64_t begin = r * shard + m * mb;
      // Channels key per-sample state by the id within the replica's shard.
      const at::Tensor ids = setup_.shard_samples > 0
                                 ? batch.ids.narrow(0, begin, mb) - r * setup_.shard_samples
                                 : batch.ids.narrow(0, begin, mb);
      if (!op.backward) {
        at::Tensor x = s == 0 ? batch.inputs.narrow(0, begin, mb).to(device) : inputs[s][m];
        sync();
        const OpTimer timer;
        at::Tensor y = stage_forward(rep, s, x);
        if (s == S - 1) {
          const at::Tensor targets = batch.targets.narrow(0, begin, mb).to(device);
          y = models::loss(task(), y, targets) * (static_cast<double>(mb) / shard);
        }
        sync();
        result.trace.ops.push_back(
            compute_op(netmodel::OpKind::kForward, s, m, r, timer, rep.flops_per_sample[s] * mb));
        outputs[s][m] = y;
        if (s < S - 1 && !all_finite(y)) {
          throw NonFiniteError("non-finite activation at " + where(step, r, m) + ": stage " +
                               std::to_string(s) + " output, forward across boundary " +
                               std::to_string(s));
        }
        if (s < S - 1) {
          compressors::TransferStats st;
          const at::Tensor received = rep.fw[s]->transfer(y.detach(), ids, &st);
          inputs[s + 1][m] = received.detach().requires_grad_(true);
          result.trace.ops.push_back(
              message_op(netmodel::OpKind::kSendActivation, s, m, r, y, st, result.fw[s]));
        }
      } else {
        sync();
        const OpTimer timer;
        if (s == S - 1) {
          const double loss = outputs[s][m].item<double>();
          if (!std::isfinite(loss)) {
            throw NonFiniteError("non-finite loss at " + where(step, r, m) + " (last stage " +
                                 std::to_string(s) + ")");
          }
          loss_sum += loss;
          outputs[s][m].backward();
        } else {
          outputs[s][m].backward(grads_in[s][m]);
        }
        sync();
        result.trace.ops.push_back(compute_op(netmodel::OpKind::kBackward, s, m, r, timer,
                                              2.0 * rep.flops_per_sample[s] * mb));
        if (s > 0 && !all_finite(inputs[s][m].grad())) {
          throw NonFiniteError("non-finite activation-gradient at " + where(step, r, m) +
                               ": stage " + std::to_string(s) +
                               " input, backward across boundary " + std::to_string(s - 1));
        }
        if (s > 0) {
          compressors::TransferStats st;
          grads_in[s - 1][m] = rep.bw[s - 1]->transfer(inputs[s][m].grad(), ids, &st);
          result.trace.ops.push_back(message_op(netmodel::OpKind::kSendGradient, s, m, r,
                                                inputs[s][m].grad(), st, result.bw[s - 1]));
        }
        outputs[s][m] = at::Tensor();
        inputs[s][m] = at::Tensor();
        grads_in[s][m] = at::Tensor();
      }
    }
  }
  result.loss = loss_sum / D;
  if (D > 1) sync_gradients(result);

  result.lr = learning_rate(setup_.optim, step, total_steps);
  for (int r = 0; r < D; ++r) {
    Replica& rep = *replicas_[r];
    std::vector<at::Tensor> all;
    for (const auto& p : rep.stage_params) all.insert(all.end(), p.begin(), p.end());
    const double norm = clip_global_norm(all, setup_.optim.clip);
    if (!std::isfinite(norm)) {
      int bad = 0;
      for (int s = 0; s < S && bad == 0; ++s) {
        for (const auto& p : rep.stage_params[s]) {
          if (p.grad().defined() && !all_finite(p.grad())) bad = s + 1;
        }
      }
      throw NonFiniteError("non-finite parameter gradient at step " + std::to_string(step + 1) +
                           " (replica " + std::to_string(r) + ", stage " +
                           std::to_string(std::max(bad - 1, 0)) + ")");
    }
    if (r == 0) result.grad_norm = norm;
    for (int s = 0; s < S; ++s) {
      sync();
      const OpTimer timer;
      rep.optimizers[s].set_lr(result.lr);
      rep.optimizers[s].step();
      sync();
      netmodel::TraceOp op = compute_op(netmodel::OpKind::kOptimizer, s, -1, r, timer,
                                        rep.optimizers[s].flops_per_step());
      op.memory_bytes = rep.optimizers[s].memory_bytes_per_step();
      result.trace.ops.push_back(op);
    }
  }
  finish_means(result.fw);
  finish_means(result.bw);
  finish_means(result.grad);
  for (const auto& op : result.trace.ops) result.compute_s += op.compute_s;
  return result;
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
      result.trace.ops.push_back(
          message_op(netmodel::OpKind::kAllReduce, s, -1, r, g, st, result.grad[s]));
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
  at::Tensor h = batch.inputs.to(device);
  for (int s = 0; s < stages(); ++s) {
    h = stage_forward(rep, s, h);
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
