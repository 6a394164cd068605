// DistEngine: set-up, rank 0's commands, the followers' loop, evaluation (dist_engine.h).
#include "distributed/dist_engine.h"

#include <torch/cuda.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <sstream>
#include <thread>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "common/errors.h"
#include "common/options.h"
#include "common/version.h"
#include "compressors/channels/factory.h"
#include "config/optim_registry.h"
#include "distributed/internal/watchdog.h"
#include "models/torch/cuts.h"
#include "models/torch/model_registry.h"
#include "pipeline/schedule.h"
#include "sim/engine_parts.h"

namespace slowpipe::dist {
namespace {

constexpr int kReportTag = 1000000;
constexpr int kEvalResultTag = 1000002;
// Evaluation activations: boundary b's is tag kEvalTag + 2 + b (sender chunk b).
constexpr int kEvalTag = 1100000;

std::vector<int64_t> id_list(const at::Tensor& ids) {
  const at::Tensor c = ids.to(at::kCPU, at::kLong).contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

std::string store_text(c10d::Store& store, const std::string& key) {
  const auto v = store.get(key);
  return std::string(v.begin(), v.end());
}

// The `key=value` lines of a configuration text, by key.
std::map<std::string, std::string> config_lines(const std::string& text) {
  std::istringstream in(text);
  std::map<std::string, std::string> out;
  for (std::string l; std::getline(in, l);) {
    const size_t eq = l.find('=');
    out[l.substr(0, eq)] = eq == std::string::npos ? "" : l.substr(eq + 1);
  }
  return out;
}

}  // namespace

std::string config_differences(const std::string& theirs, const std::string& rank0) {
  const auto a = config_lines(theirs), b = config_lines(rank0);
  std::map<std::string, std::pair<std::string, std::string>> diff;
  for (const auto& [k, v] : a) {
    const auto it = b.find(k);
    if (it == b.end() || it->second != v) diff[k] = {v, it == b.end() ? "(unset)" : it->second};
  }
  for (const auto& [k, v] : b)
    if (a.count(k) == 0) diff[k] = {"(unset)", v};
  std::string out;
  for (const auto& [k, v] : diff)
    out += (out.empty() ? "" : "; ") + k + "=" + v.first + " (rank 0: " + v.second + ")";
  return out;
}

namespace {

// dist.world_size and dist.rank against the pipeline's layout.
void check_world(const config::DistConfig& cfg, const Layout& layout) {
  if (cfg.world_size != layout.world())
    throw UsageError("dist.world_size = " + std::to_string(cfg.world_size) +
                     ", but the run has pipeline.stages x pipeline.replicas = " +
                     std::to_string(layout.world()) + " processes");
  if (cfg.rank >= cfg.world_size)
    throw UsageError("dist.rank = " + std::to_string(cfg.rank) +
                     " is not below dist.world_size = " + std::to_string(cfg.world_size));
}

}  // namespace

DistEngine::DistEngine(sim::EngineSetup setup, const config::DistConfig& cfg,
                       const std::string& config_text)
    : setup_(std::move(setup)) {
  config::validate(setup_.pipeline);
  layout_ = {setup_.pipeline.stages, setup_.pipeline.replicas};
  check_world(cfg, layout_);
  if (setup_.channel_factory) throw std::logic_error("DistEngine: channel factories unsupported");
  replica_ = layout_.replica_of(cfg.rank);
  stage_ = layout_.stage_of(cfg.rank);
  const torch::Device device(setup_.device);
  if (device.is_cuda() && !torch::cuda::is_available())
    throw UsageError("run.device = " + setup_.device +
                     ", but this libtorch build has no CUDA device available");
  if (setup_.model.dropout > 0 && cfg.rank == 0)
    std::fprintf(stderr,
                 "slowpipe train: warning: model.dropout = %g: each process draws its own dropout "
                 "masks, so the losses will not equal a single-process run's "
                 "(docs/distributed.md)\n",
                 setup_.model.dropout);
  comm_ = std::make_unique<Comm>(cfg, layout_);
  watchdog_ = std::make_unique<Watchdog>(*comm_);
  check_configs(config_text);
  comm_->connect();

  model_ = models::build_model(setup_.model, setup_.data, setup_.seed);
  model_.compute_dtype = setup_.dtype == "bf16" ? at::kBFloat16 : at::kFloat;
  for (auto& b : model_.blocks) b->to(device);
  const auto schedule =
      netmodel::make_schedule(setup_.pipeline.schedule, layout_.stages,
                              setup_.pipeline.microbatches, setup_.pipeline.virtual_stages);
  agree_on_cuts(schedule.chunks);
  device_of_ = schedule.device_of;
  order_ = netmodel::single_process_order(schedule);
  my_ops_ = schedule.per_device[static_cast<size_t>(stage_)];
  build_parts();
  build_shared_cuts();
}

void DistEngine::build_parts() {
  for (int c = 0; c < chunks(); ++c) {
    size_t n = 0;
    for (size_t b = cuts_[c]; b < cuts_[c + 1]; ++b) n += model_.blocks[b]->parameters().size();
    params_per_chunk_.push_back(n);
  }
  for (int c = 0; c < chunks(); ++c) {
    if (device_of_[static_cast<size_t>(c)] != stage_) continue;
    Part p;
    p.chunk = c;
    std::vector<models::ParamRole> roles;
    for (size_t b = cuts_[c]; b < cuts_[c + 1]; ++b) {
      for (const auto& t : model_.blocks[b]->parameters()) p.params.push_back(t);
      for (const auto r : model_.blocks[b]->parameter_roles()) roles.push_back(r);
      p.flops_per_sample += model_.blocks[b]->forward_flops_per_sample();
    }
    p.forward_kernels = sim::forward_kernels(model_, cuts_[c], cuts_[c + 1]);
    p.optimizer = std::make_unique<sim::StageOptimizer>(setup_.optim, p.params, roles);
    build_channels(p);
    build_momentum_channels(p);
    parts_.push_back(std::move(p));
  }
}

DistEngine::~DistEngine() {
  if (!finished_ && comm_) {
    comm_->post_abort(layout_.name(comm_->rank()) + " ended the run early (see " +
                      (leader() ? "its run log" : "its error message") + ")");
    // The store ends with rank 0: give the others' watchdogs one heartbeat
    // to read the reason (they would only see the store gone).
    if (leader())
      std::this_thread::sleep_for(std::chrono::milliseconds(
          static_cast<int64_t>(1000 * std::clamp(comm_->config().timeout_s / 10, 0.05, 1.0)) +
          100));
  }
  if (watchdog_) watchdog_->stop();
}

void DistEngine::check_configs(const std::string& config_text) {
  c10d::Store& store = comm_->store();
  const std::string mine = "slowpipe/config/" + std::to_string(comm_->rank());
  store.set(mine, std::vector<uint8_t>(config_text.begin(), config_text.end()));
  const auto timeout =
      std::chrono::milliseconds(static_cast<int64_t>(comm_->config().timeout_s * 1000));
  if (leader()) {
    for (int r = 1; r < layout_.world(); ++r) {
      const std::string key = "slowpipe/config/" + std::to_string(r);
      store.wait({key}, timeout);
      const std::string theirs = store_text(store, key);
      if (theirs != config_text) {
        const std::string why = layout_.name(r) + " runs another configuration than rank 0 (" +
                                config_differences(theirs, config_text) +
                                "); every rank must be given the same "
                                "options, only dist.rank may differ";
        comm_->post_abort(kUsagePrefix + why);
        // The store ends with this process: let the others read the reason first.
        std::this_thread::sleep_for(std::chrono::milliseconds(1000));
        throw UsageError(why);
      }
    }
    store.set("slowpipe/config_ok", std::vector<uint8_t>{1});
    return;
  }
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (!store.check({"slowpipe/config_ok"})) {
    const std::string reason = strip_usage(comm_->abort_reason(0));
    if (!reason.empty()) throw UsageError(reason);
    if (std::chrono::steady_clock::now() > until)
      throw DistError(layout_.name(comm_->rank()) +
                      ": rank 0 did not confirm the configuration within dist.timeout");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void DistEngine::agree_on_cuts(int chunks) {
  // Rank 0 decides (pipeline.balance = time measures, which differs between processes).
  const int C = chunks;
  at::Tensor t = at::zeros({C + 1}, at::kLong);
  if (leader()) {
    const auto user = parse_int_list("pipeline.cuts", setup_.pipeline.cuts);
    const auto cuts = models::resolve_cuts(model_, C, user, setup_.pipeline.balance, setup_.probe);
    for (int i = 0; i <= C; ++i) t.data_ptr<int64_t>()[i] = static_cast<int64_t>(cuts[i]);
  }
  comm_->broadcast(t, 0);
  for (int i = 0; i <= C; ++i) cuts_.push_back(static_cast<size_t>(t.data_ptr<int64_t>()[i]));
}

void DistEngine::build_channels(Part& p) {
  namespace cx = compressors;
  const auto& c = setup_.compress;
  const int r = replica_, k = p.chunk, C = chunks();
  // Named and seeded as the single-process engine does (engine.cpp).
  const auto boundary = [&](int b) {
    return cx::make_boundary(
        c.fw_for(b), c.bw_for(b),
        sim::channel_context(setup_, "r" + std::to_string(r) + ".b" + std::to_string(b),
                             static_cast<uint64_t>(r) * 4096 + b));
  };
  if (k + 1 < C) {
    cx::Boundary b = boundary(k);
    p.fw_out = std::move(b.fw);
    p.bw_in = std::move(b.bw);
    p.fw_shadow = std::move(boundary(k).fw);
  }
  if (k > 0) {
    cx::Boundary b = boundary(k - 1);
    p.fw_in = std::move(b.fw);
    p.bw_out = std::move(b.bw);
    if (!c.bw_for(k - 1).shared()) p.bw_shadow = std::move(boundary(k - 1).bw);
  }
  if (layout_.replicas > 1) {
    // The momentum exchange: gradients cross uncompressed during its warm-up only.
    const bool momentum = c.grad_sync == cx::GradSync::kMomentum;
    const cx::ChannelSpec spec = momentum ? cx::ChannelSpec() : c.grad.resolved();
    grad_plain_ = spec.text() == "none";
    for (int q = 0; q < layout_.replicas; ++q)
      p.grad.push_back(cx::make_channel(
          spec, sim::channel_context(setup_, "r" + std::to_string(q) + ".grad" + std::to_string(k),
                                     static_cast<uint64_t>(q) * 4096 + 2048 + k)));
  }
}

std::vector<std::string> DistEngine::fw_specs() const {
  std::vector<std::string> out;
  for (int b = 0; b + 1 < chunks(); ++b)
    out.push_back(compressors::canonical_spec(setup_.compress.fw_for(b)));
  return out;
}

std::vector<std::string> DistEngine::bw_specs() const {
  std::vector<std::string> out;
  for (int b = 0; b + 1 < chunks(); ++b)
    out.push_back(compressors::canonical_spec(setup_.compress.bw_for(b)));
  return out;
}

std::string DistEngine::rank_map() const {
  std::string out;
  for (int r = 0; r < layout_.world(); ++r)
    out += (out.empty() ? "" : ", ") + std::to_string(r) + "=r" +
           std::to_string(layout_.replica_of(r)) + "s" + std::to_string(layout_.stage_of(r));
  return out;
}

void DistEngine::command(Command c, int64_t a, int64_t b, const at::Tensor& ids) const {
  at::Tensor head = at::zeros({4}, at::kLong);
  int64_t* h = head.data_ptr<int64_t>();
  h[0] = c;
  h[1] = a;
  h[2] = b;
  h[3] = ids.defined() ? ids.numel() : 0;
  comm_->broadcast(head, 0);
  if (h[3] > 0) {
    at::Tensor t = ids.to(at::kCPU, at::kLong).contiguous().clone();
    comm_->broadcast(t, 0);
  }
}

void DistEngine::serve(const models::Dataset& data) {
  try {
    while (true) {
      at::Tensor head = at::zeros({4}, at::kLong);
      comm_->broadcast(head, 0);
      const int64_t* h = head.data_ptr<int64_t>();
      const int64_t cmd = h[0], a = h[1], b = h[2], n = h[3];
      std::vector<int64_t> ids;
      if (n > 0) {
        at::Tensor t = at::empty({n}, at::kLong);
        comm_->broadcast(t, 0);
        ids = id_list(t);
      }
      if (cmd == kStep) {
        comm_->step() = a + 1;
        const RankReport rep = local_step(data.get(models::Split::kTrain, ids), a, b);
        comm_->send(pack(rep), {}, 0, kReportTag);
        comm_->wait_sends();
      } else if (cmd == kEval) {
        local_eval(data.get(models::Split::kValidation, ids), a != 0);
      } else if (cmd == kEpoch) {
        set_channel_epoch(static_cast<int>(a));
      } else if (cmd == kSave || cmd == kLoad) {
        serve_state(cmd == kSave);
      } else if (cmd == kStop) {
        watchdog_->stop();
        comm_->barrier();
        finished_ = true;
        return;
      } else {
        throw DataError("dist: unknown command " + std::to_string(cmd) + " from rank 0");
      }
    }
  } catch (const sim::NonFiniteError& e) {
    comm_->post_abort(std::string(kDivergedPrefix) + e.what());
    throw;
  } catch (const DistError&) {
    throw;
  } catch (const std::exception& e) {
    comm_->post_abort(layout_.name(comm_->rank()) + ": " + e.what());
    throw;
  }
}

void DistEngine::finish() {
  if (finished_) return;
  command(kStop, 0, 0, at::Tensor());
  watchdog_->stop();
  comm_->barrier();
  finished_ = true;
}

void DistEngine::set_epoch(int epoch) {
  command(kEpoch, epoch, 0, at::Tensor());
  set_channel_epoch(epoch);
}

void DistEngine::warm_up(const models::Batch& batch, int passes) {
  // Local and untimed: the whole model on one micro-batch, then no gradients left.
  const torch::Device device(setup_.device);
  const int64_t mb = batch.inputs.size(0) /
                     (static_cast<int64_t>(layout_.replicas) * setup_.pipeline.microbatches);
  for (int pass = 0; pass < passes; ++pass) {
    at::Tensor h = batch.inputs.narrow(0, 0, mb).to(device);
    for (auto& b : model_.blocks) h = b->forward(h);
    models::loss(task(), h, batch.targets.narrow(0, 0, mb).to(device)).backward();
    for (auto& b : model_.blocks)
      for (auto& p : b->parameters()) p.mutable_grad() = at::Tensor();
  }
  if (device.is_cuda()) torch::cuda::synchronize();
}

at::Tensor DistEngine::chunk_forward(const Part& p, const at::Tensor& x, const at::Tensor& inputs) {
  // With a model's boundary map, what enters and leaves a chunk is what crosses a cut.
  const auto c = static_cast<size_t>(p.chunk);
  return models::forward_stage(model_, cuts_[c], cuts_[c + 1], x, inputs);
}

sim::StepResult DistEngine::train_step(const models::Batch& batch, int64_t step, int64_t total) {
  const auto t0 = sim::Clock::now();
  try {
    command(kStep, step, total, batch.ids);
    comm_->step() = step + 1;
    std::vector<RankReport> reports(static_cast<size_t>(layout_.world()));
    reports[0] = local_step(batch, step, total);
    for (int r = 1; r < layout_.world(); ++r)
      reports[static_cast<size_t>(r)] = unpack(comm_->recv(r, kReportTag, nullptr));
    sim::StepResult res = merge(reports, layout_, order_, device_of_);
    res.samples = batch.inputs.size(0);
    res.lr = config::learning_rate(setup_.optim, step, total);
    res.trace.stages = layout_.stages;
    res.trace.chunks = chunks();
    res.trace.microbatches = setup_.pipeline.microbatches;
    res.trace.replicas = layout_.replicas;
    res.trace.schedule = setup_.pipeline.schedule;
    res.trace.thread_cpu = torch::Device(setup_.device).is_cpu() && at::get_num_threads() == 1 &&
                           sim::blas_threads() == 1;
    state_bytes_ = 0;
    for (const auto& r : reports) state_bytes_ += r.channel_state_bytes;
    res.trace.sharded_exchange = reports[0].sharded;
    res.dist_step_s = sim::seconds_since(t0);
    return res;
  } catch (const DistError& e) {
    if (e.diverged()) throw sim::NonFiniteError(e.what());
    throw;
  }
}

sim::EvalResult DistEngine::evaluate(const models::Batch& batch, bool compressed) {
  command(kEval, compressed ? 1 : 0, 0, batch.ids);
  sim::EvalResult out = local_eval(batch, compressed);
  const int last = device_of_.back();  // the device of the last chunk
  if (last != 0) {
    const Bytes b = comm_->recv(layout_.rank(0, last), kEvalResultTag, nullptr);
    if (b.size() != sizeof out) throw DataError("dist: malformed evaluation result");
    std::memcpy(&out, b.data(), sizeof out);
  }
  return out;
}

sim::EvalResult DistEngine::local_eval(const models::Batch& batch, bool compressed) {
  if (replica_ != 0) return {};
  share_projections(nullptr);
  torch::NoGradGuard no_grad;
  model_.train(false);  // no dropout draw while evaluating
  struct TrainAgain {
    const models::Model& m;
    ~TrainAgain() { m.train(true); }
  } train_again{model_};
  const torch::Device device(setup_.device);
  const int C = chunks();
  const auto device_of = [&](int c) { return device_of_[static_cast<size_t>(c)]; };
  at::Tensor h;
  for (const Part& p : parts_) {  // chunk order
    const int c = p.chunk;
    if (c == 0) {
      h = batch.inputs.to(device);
    } else {
      Dims dims;
      const Bytes b = comm_->recv(layout_.rank(0, device_of(c - 1)), kEvalTag + 1 + c, &dims);
      h = at::empty(dims, at::kFloat);
      if (static_cast<size_t>(h.nbytes()) != b.size())
        throw DataError("dist: malformed activation");
      std::memcpy(h.data_ptr<float>(), b.data(), b.size());
      h = h.to(device);
    }
    h = chunk_forward(p, h, batch.inputs.to(device));
    if (c + 1 == C) break;
    // What the single-process engine hands the next chunk: the activation, or
    // its compressed-inference reconstruction; sent as fp32 (not logged).
    if (compressed) h = p.fw_out->infer(h, nullptr);
    const at::Tensor t = h.to(at::kCPU, at::kFloat).contiguous();
    const auto* bytes = reinterpret_cast<const uint8_t*>(t.data_ptr<float>());
    comm_->send(Bytes(bytes, bytes + t.nbytes()), Dims(t.sizes().begin(), t.sizes().end()),
                layout_.rank(0, device_of(c + 1)), kEvalTag + 2 + c);
  }
  comm_->wait_sends();
  if (parts_.back().chunk + 1 < C) return {};
  const at::Tensor targets = batch.targets.to(device);
  sim::EvalResult out;
  out.items = targets.numel();
  out.loss_sum = models::loss(task(), h, targets).item<double>() * static_cast<double>(out.items);
  out.correct = models::correct(task(), h, targets);
  if (!leader()) {
    const auto* p = reinterpret_cast<const uint8_t*>(&out);
    comm_->send(Bytes(p, p + sizeof out), {}, 0, kEvalResultTag);
    comm_->wait_sends();
  }
  return out;
}

sim::DistEngineFactory engine_factory() {
  return [](const sim::EngineSetup& setup, const config::TrainConfig& cfg,
            const sim::ResolvedConfig& resolved) -> std::unique_ptr<sim::StepEngine> {
    std::string text = std::string("slowpipe.version=") + kVersion +
                       "\nslowpipe.git_commit=" + git_commit() +
                       "\nslowpipe.git_dirty=" + git_dirty() + "\n";
    for (const auto& [k, v] : resolved)
      if (k != "dist.rank" && k != "run.progress" && k != "run.out" && k != "run.overwrite" &&
          k != "dist.verbose")
        text += k + "=" + v + "\n";
    return std::make_unique<DistEngine>(setup, cfg.dist, text);
  };
}

}  // namespace slowpipe::dist
