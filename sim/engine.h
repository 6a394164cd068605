// The pipeline engine: D data-parallel replicas of a model cut into S stages, run
// for real in one process, micro-batch by micro-batch, in the order a schedule
// (pipeline/schedule.h: GPipe, 1F1B, interleaved, ZB-H1) dictates; with virtual
// stages the model is cut into stages x v chunks, several per device. At every stage boundary the
// activation leaving a stage is detached, sent through the boundary's forward channel and handed to
// the next stage as a new leaf; its gradient comes back explicitly through the backward channel.
// With D > 1 each stage's parameter gradients cross a gradient channel and are averaged as an
// all-reduce would. Every op is timed and recorded in a netmodel::StepTrace, which the network
// model replays into simulated time.
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "compressors/channels/channel.h"
#include "compressors/codecs/config.h"
#include "config/section_configs.h"
#include "models/facts/model_config.h"
#include "models/torch/dataset.h"
#include "models/torch/model.h"
#include "netmodel/trace.h"
#include "pipeline/schedule.h"
#include "sim/optimizer.h"

namespace torch::serialize {
class OutputArchive;
class InputArchive;
}  // namespace torch::serialize

namespace slowpipe::sim {

// A NaN or infinity where training needs finite numbers: the loss, an
// activation leaving a stage, an activation-gradient, or a parameter gradient.
// The message names the step, the stage or boundary and the direction.
class NonFiniteError : public std::runtime_error {
 public:
  explicit NonFiniteError(const std::string& what) : std::runtime_error(what) {}
};

// Sets libtorch's intra-op threads and, when libtorch runs on OpenBLAS, the
// BLAS thread pool to `threads` (OpenBLAS sizes its own pool to the machine
// otherwise: a run then computes on two threads and its idle workers spin).
void set_compute_threads(int threads);

enum class ChannelRole { kForward, kBackward, kGradient };

// Builds the channel of one (role, boundary or stage, replica); tests use it to
// put recording channels on the boundaries. Null = built from the CompressConfig.
using ChannelFactory =
    std::function<std::unique_ptr<compressors::Channel>(ChannelRole role, int index, int replica)>;

struct EngineSetup {
  models::ModelConfig model;
  models::DatasetInfo data;
  config::PipelineConfig pipeline;
  config::OptimConfig optim;
  compressors::CompressConfig compress;
  uint64_t seed = 1;
  std::string device = "cpu";
  std::string dtype = "fp32";  // run.dtype: what the stages compute in (fp32 | bf16)
  int64_t train_samples = 0;   // size of the train split (AQ-SGD buffers)
  // Samples per replica shard when batches come from a ShardSampler: replica r
  // then sees only ids in [r * shard_samples, (r + 1) * shard_samples), and its
  // AQ-SGD buffers hold that shard alone (keyed by the id within the shard).
  // 0 = no fixed shards (every replica may see every id).
  int64_t shard_samples = 0;
  const models::Batch* probe = nullptr;  // for pipeline.balance = time
  ChannelFactory channel_factory;        // optional override
};

// One channel's traffic summed over a step (all replicas and micro-batches).
struct ChannelSummary {
  uint64_t bytes = 0;
  double rel_error = 0;   // mean over transfers
  double delta_norm = 0;  // mean over transfers (AQ-SGD)
  double encode_s = 0;
  double decode_s = 0;
  int transfers = 0;
};

struct StepResult {
  double loss = 0;       // mean training loss over the global batch
  double grad_norm = 0;  // global norm before clipping
  double lr = 0;
  int64_t samples = 0;
  double compute_s = 0;                // measured forward + backward + optimizer seconds
  std::vector<ChannelSummary> fw, bw;  // per boundary
  std::vector<ChannelSummary> grad;    // per stage (D > 1)
  netmodel::StepTrace trace;
  // Distributed runs (distributed/) only; empty or 0 otherwise.
  double dist_step_s = 0;  // wall time from the step's start to every rank's report
  std::vector<uint64_t> fw_wire, bw_wire, grad_wire;  // bytes handed to c10d, framing included
};

struct EvalResult {
  double loss_sum = 0;  // sum of per-item losses (items = samples or tokens)
  int64_t correct = 0;
  int64_t items = 0;  // targets counted (samples for classification, tokens for LM)
};

// What the trainer drives: the single-process PipelineEngine below, or one rank of
// a distributed run (distributed/dist_engine.h), which computes only its own stage of
// its own replica and whose rank 0 returns the results of the whole step.
class StepEngine {
 public:
  virtual ~StepEngine() = default;
  virtual StepResult train_step(const models::Batch& batch, int64_t step, int64_t total_steps) = 0;
  virtual EvalResult evaluate(const models::Batch& batch, bool compressed) = 0;
  virtual void set_epoch(int epoch) = 0;
  virtual void warm_up(const models::Batch& batch, int passes) = 0;
  virtual int stages() const = 0;
  virtual int replicas() const = 0;
  virtual const std::vector<size_t>& cuts() const = 0;
  virtual models::Task task() const = 0;
  // The whole model of replica 0 (a distributed rank trains only its stage of it).
  virtual const models::Model& model() const = 0;
  virtual uint64_t channel_state_bytes() const = 0;
  virtual std::vector<std::string> fw_specs() const = 0;
  virtual std::vector<std::string> bw_specs() const = 0;
  virtual void save_state(torch::serialize::OutputArchive& archive) const = 0;
  virtual void load_state(torch::serialize::InputArchive& archive) = 0;
  // Distributed runs: a rank other than 0 follows (serve() runs rank 0's
  // commands until the run ends); rank 0 calls finish() at a clean end.
  virtual bool follower() const { return false; }
  virtual void serve(const models::Dataset& /*data*/) {}
  virtual void finish() {}
  // "0=r0s0, 1=r0s1, ...": which rank computes which (replica, stage); "" in one process.
  virtual std::string rank_map() const { return ""; }
  // The c10d backend in use ("gloo", "nccl"); "" in one process.
  virtual std::string dist_backend() const { return ""; }
};

struct OpSite;  // engine_parts.h

class PipelineEngine : public StepEngine {
 public:
  explicit PipelineEngine(EngineSetup setup);
  ~PipelineEngine() override;
  PipelineEngine(const PipelineEngine&) = delete;
  PipelineEngine& operator=(const PipelineEngine&) = delete;

  // One optimizer step on `batch` (the global batch: all replicas' shards).
  // Throws NonFiniteError when a loss, activation or gradient is not finite
  // (before any parameter changes when the loss or an activation is).
  StepResult train_step(const models::Batch& batch, int64_t step, int64_t total_steps) override;
  // Forward only on replica 0; `compressed` sends activations through the
  // forward channels' inference path.
  EvalResult evaluate(const models::Batch& batch, bool compressed) override;
  void set_epoch(int epoch) override;
  // Timing hygiene: runs `passes` forward + backward passes of the whole pipeline
  // on `batch` with no channels and no optimizer step, then discards the
  // gradients, so the first timed step does not pay for allocator and thread-pool
  // warm-up. Parameters, optimizer and channel states are left untouched.
  void warm_up(const models::Batch& batch, int passes) override;

  // Model chunks C = pipeline.stages x pipeline.virtual_stages: the pieces the
  // model is cut into, each with its own parameters, optimizer and (D > 1)
  // gradient channel; boundary b lies between chunks b and b + 1.
  int stages() const override { return static_cast<int>(cuts_.size()) - 1; }
  const netmodel::Schedule& schedule() const { return schedule_; }
  int replicas() const override { return static_cast<int>(replicas_.size()); }
  const std::vector<size_t>& cuts() const override { return cuts_; }
  const std::vector<netmodel::ScheduledOp>& order() const { return order_; }
  models::Task task() const override;
  const models::Model& model() const override { return model(0); }
  const models::Model& model(int replica) const;
  models::Model& model(int replica = 0);
  std::vector<at::Tensor> optimizer_state(int replica) const;
  uint64_t channel_state_bytes() const override;
  // Canonical channel specs, per boundary: fw and bw; and the gradient spec.
  std::vector<std::string> fw_specs() const override;
  std::vector<std::string> bw_specs() const override;
  // Everything that shapes the next steps (parameters, buffers, optimizer
  // state, channel state), for bitwise resume (engine_state.cpp). load_state()
  // checks every model tensor before it changes anything and throws DataError
  // when the archive was written for another configuration.
  void save_state(torch::serialize::OutputArchive& archive) const override;
  void load_state(torch::serialize::InputArchive& archive) override;

 private:
  struct Replica;
  struct StepWork;
  // `inputs`: the model inputs of the same samples (the boundary map's token ids).
  at::Tensor stage_forward(Replica& r, int stage, const at::Tensor& x, const at::Tensor& inputs);
  // The passes of one step (engine.cpp): each runs one op of the global order.
  void run_forward(StepWork& w, const netmodel::ScheduledOp& op, StepResult& result);
  void run_backward(StepWork& w, const netmodel::ScheduledOp& op, StepResult& result);
  void run_weight_backward(StepWork& w, const netmodel::ScheduledOp& op, StepResult& result);
  void sync_gradients(StepResult& result);
  // Clips replica r's gradients by the global norm (throws NonFiniteError).
  double clip_replica(int r, int64_t step);
  void step_optimizers(StepResult& result, int64_t step, int64_t total_steps);
  // compress.grad_sync = momentum (engine_momentum.cpp).
  void build_momentum_channels();
  // Replica r's per-chunk parameters, optimizers and cost counts; its boundary
  // and gradient channels (the constructor's two halves per replica).
  void build_stages(Replica& rep);
  void build_channels(Replica& rep, int r);
  // Replica r's forward and backward passes of one step in the global order;
  // returns the sum of its micro-batch losses.
  double run_replica(const models::Batch& batch, int64_t step, int r, StepResult& result);
  bool momentum_exchange_active(int64_t step) const;
  void exchange_momentum(StepResult& result, int64_t step, int64_t total_steps);
  at::Tensor microbatch_ids(const StepWork& w, int microbatch) const;
  OpSite site(const StepWork& w, int chunk, int microbatch, int peer = -1) const;
  void sync_device() const;
  EngineSetup setup_;
  netmodel::Schedule schedule_;
  std::vector<size_t> cuts_;
  std::vector<netmodel::ScheduledOp> order_;
  std::vector<std::unique_ptr<Replica>> replicas_;
  bool cuda_ = false;
};

}  // namespace slowpipe::sim
