// One rank of a distributed run: the StepEngine the trainer drives, computing
// only device s of replica r (rank = r * S + s, layout.h) in its own process,
// with real messages to its neighbours over c10d (comm.h). A device holds one
// model chunk, or pipeline.virtual_stages chunks with an interleaved schedule
// (chunk c on the schedule's device_of[c]); "stage" in the log means a chunk.
//
// Rank 0 drives: each engine call the trainer makes on rank 0 (a step, an
// evaluation, a new epoch) is first broadcast as a command with the batch's
// sample ids, so every rank loads the same batch from its own copy of the data
// and takes part; the other ranks run serve(), which executes commands until
// rank 0 ends the run. After a step every rank sends rank 0 a report
// (report.h), which rank 0 merges into the StepResult the single-process engine
// would return: the same losses, bytes and trace, plus the measured wall time
// of the distributed step and the bytes handed to c10d.
//
// Same math as the single-process engine: each rank builds the whole model from
// the same seed and keeps its stage, builds the channels of its two boundaries
// exactly as the single-process engine names and seeds them, and calls only
// its half of each (Channel::send on the sending rank, Channel::receive on the
// receiving one), so feedback state lives where it belongs. Data-parallel
// gradients: `none` goes through a c10d all-reduce; any codec is exchanged as
// messages (all-gather) and every rank decodes every replica's message, in
// replica order, with a receiver copy per sender. docs/distributed.md.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compressors/channels/channel.h"
#include "distributed/comm.h"
#include "distributed/report.h"
#include "models/torch/dataset.h"
#include "sim/engine.h"
#include "sim/engine_parts.h"
#include "sim/optimizer.h"
#include "sim/trainer.h"

namespace slowpipe::dist {

class Watchdog;

class DistEngine : public sim::StepEngine {
 public:
  // Joins the rendezvous (cfg.timeout_s), checks that every rank runs the same
  // configuration (`config_hash`, from the resolved keys except dist.rank) and
  // the same slowpipe build, agrees on the cuts (rank 0's), starts the watchdog.
  DistEngine(sim::EngineSetup setup, const config::DistConfig& cfg, const std::string& config_text);
  ~DistEngine() override;

  bool leader() const { return comm_->rank() == 0; }
  bool follower() const override { return !leader(); }
  // Ranks other than 0: runs rank 0's commands until it ends the run.
  void serve(const models::Dataset& data) override;
  // Rank 0: ends the run on every rank (a clean stop; the destructor stops
  // the others with an abort reason when finish() was not called).
  void finish() override;
  std::string rank_map() const override;
  std::string dist_backend() const override { return comm_->backend(); }

  sim::StepResult train_step(const models::Batch& batch, int64_t step, int64_t total) override;
  sim::EvalResult evaluate(const models::Batch& batch, bool compressed) override;
  void set_epoch(int epoch) override;
  void warm_up(const models::Batch& batch, int passes) override;
  int stages() const override { return chunks(); }
  int replicas() const override { return layout_.replicas; }
  const std::vector<size_t>& cuts() const override { return cuts_; }
  models::Task task() const override { return model_.task; }
  const models::Model& model() const override { return model_; }
  uint64_t channel_state_bytes() const override { return state_bytes_; }
  std::vector<std::string> fw_specs() const override;
  std::vector<std::string> bw_specs() const override;
  void save_state(torch::serialize::OutputArchive& archive) const override;
  void load_state(torch::serialize::InputArchive& archive) override;

 private:
  enum Command : int64_t { kStep = 1, kEval = 2, kEpoch = 3, kStop = 4, kSave = 5, kLoad = 6 };
  // One model chunk this rank holds: one per process, or pipeline.virtual_stages
  // with an interleaved schedule (chunk c on device c's device_of).
  struct Part {
    int chunk = 0;
    std::vector<at::Tensor> params;
    std::unique_ptr<sim::StageOptimizer> optimizer;
    double flops_per_sample = 0;
    int forward_kernels = 0;  // of the chunk's forward (sim::forward_kernels)
    // Boundary `chunk` (sends forward, receives backward) and `chunk - 1`
    // (receives forward, sends backward).
    std::unique_ptr<compressors::Channel> fw_out, bw_in, fw_in, bw_out;
    // Copies of the receivers' halves of fw_out and bw_out, for the messages'
    // relative errors (dist_step.cpp); no bw_shadow for a topk:shared
    // backward, whose receiver takes the masks the forward's sender kept.
    std::unique_ptr<compressors::Channel> fw_shadow, bw_shadow;
    // Gradient channels of every replica of this chunk (replicas > 1).
    std::vector<std::unique_ptr<compressors::Channel>> grad;
    // The momentum exchange of this chunk (docs/grad-sync.md): this replica's
    // worker channels to each shard server j (sender halves; j = replica_
    // whole), copies of their receivers' halves (relative errors), the
    // receivers' halves of every replica's channel to this replica's shard,
    // and every replica's server channel (this replica's whole, the others'
    // receiver halves).
    std::vector<std::unique_ptr<compressors::Channel>> m_workers, m_shadows, m_inbound, m_servers;
  };
  int chunks() const { return static_cast<int>(cuts_.size()) - 1; }
  void check_configs(const std::string& config_text);
  void agree_on_cuts(int chunks);
  void build_parts();
  void build_channels(Part& p);
  void command(Command c, int64_t a, int64_t b, const at::Tensor& ids) const;
  // This rank's part of a resume checkpoint (dist_state.cpp): what it carries
  // from step to step as one archive's bytes, and restoring it (DataError, and
  // nothing changed, when it does not fit); serve_state answers rank 0's
  // kSave (sends local_state) or kLoad (receives, restores, answers).
  Bytes local_state() const;
  void restore_local(const Bytes& state);
  struct LoadedState;
  void read_parts(torch::serialize::InputArchive& archive, LoadedState& st) const;
  void serve_state(bool save);
  // Calls f(prefix, channel) for every channel this rank holds (dist_state.cpp).
  template <class F>
  void for_each_channel(F&& f) const;
  // Every channel this rank holds; the epoch about to run to each.
  std::vector<compressors::Channel*> all_channels() const;
  void set_channel_epoch(int epoch);
  // This rank's part of a step and of an evaluation.
  RankReport local_step(const models::Batch& batch, int64_t step, int64_t total);
  void pipeline_ops(const models::Batch& batch, int64_t step, RankReport& rep);
  // One step's micro-batch slices and kept tensors, and the kinds of op
  // pipeline_ops runs with them (dist_step.cpp).
  struct StepSlices;
  Part& part_of(int chunk);
  void prefetch_messages();
  void forward_op(StepSlices& c, Part& p, int m, RankReport& rep);
  void backward_op(StepSlices& c, Part& p, int m, bool split, RankReport& rep);
  void weight_op(StepSlices& c, Part& p, int m, RankReport& rep);
  void send_forward(StepSlices& c, Part& p, int m, const at::Tensor& y, RankReport& rep);
  void send_backward(StepSlices& c, Part& p, int m, const at::Tensor& grad, RankReport& rep);
  void sync_gradients(RankReport& rep);
  void clip_and_update(int64_t step, int64_t total, RankReport& rep);
  // The replica's global gradient norm (rep.grad_norm) and clipping by it.
  void clip_gradients(int64_t step, RankReport& rep);
  // The trace op of the optimizer step `timer` measured (after a CUDA sync).
  netmodel::TraceOp optimizer_op(const Part& p, const sim::OpTimer& timer) const;
  // The momentum exchange (compress.grad_sync = momentum, dist_momentum.cpp):
  // whether it runs at `step` (every rank agrees), its channels, and the step.
  bool momentum_active(int64_t step);
  void build_momentum_channels(Part& p);
  void exchange_momentum(int64_t step, int64_t total, RankReport& rep);
  struct MomentumRound;
  void send_shards(MomentumRound& round, RankReport& rep);
  void serve_shard(MomentumRound& round, RankReport& rep);
  at::Tensor gather_mean(MomentumRound& round, RankReport& rep);
  sim::EvalResult local_eval(const models::Batch& batch, bool compressed);
  // A learned projection (model.bottleneck = learned:..., dist_shared.cpp):
  // its parameters at cut b belong to chunk b and are read by chunk b + 1 too.
  // Each backward or weight op of either chunk gives its gradient
  // contribution up (run_capturing); the owner adds them all in one process's
  // op order after the step's ops (add_shared_gradients), and sends the values
  // to the reader before each step and evaluation (share_projections).
  struct SharedCut {
    int boundary = 0;
    int owner = 0, reader = 0;       // the ranks of chunks b and b + 1 (this replica)
    std::vector<at::Tensor> params;  // U and the anchors: those with a gradient
    // This step's contributions taken here: (the op's place in order_, one
    // gradient per parameter, undefined where the op gave none).
    std::vector<std::pair<int64_t, std::vector<at::Tensor>>> taken;
  };
  void build_shared_cuts();
  void run_capturing(const netmodel::ScheduledOp& op, const std::function<void()>& run);
  void add_shared_gradients(RankReport& rep);
  void share_projections(RankReport* rep);
  // `inputs`: the model inputs of the same samples (the boundary map's token ids).
  at::Tensor chunk_forward(const Part& p, const at::Tensor& x, const at::Tensor& inputs);

  sim::EngineSetup setup_;
  Layout layout_;                // processes: pipeline.stages devices x replicas
  int replica_ = 0, stage_ = 0;  // stage_: this rank's device
  std::unique_ptr<Comm> comm_;
  std::unique_ptr<Watchdog> watchdog_;
  models::Model model_;
  std::vector<size_t> cuts_;                   // [chunks + 1]
  std::vector<int32_t> device_of_;             // [chunks]: the device holding chunk c
  std::vector<netmodel::ScheduledOp> order_;   // global order of one replica (merging reports)
  std::vector<netmodel::ScheduledOp> my_ops_;  // this device's own order
  std::vector<size_t> params_per_chunk_;       // tensors with a gradient slot, per chunk
  std::vector<Part> parts_;                    // this rank's chunks, in chunk order
  std::vector<SharedCut> shared_;              // learned projections at cuts this rank touches
  bool grad_plain_ = true;                     // compress.grad = none: a c10d all-reduce
  uint64_t state_bytes_ = 0;
  bool finished_ = false;
};

// What `slowpipe train` hands sim::train(): builds this rank's DistEngine, with
// the configuration text every rank must share (version, commit, resolved
// keys except dist.rank and those only rank 0 uses: run.out, run.overwrite,
// run.progress).
sim::DistEngineFactory engine_factory();

// The keys whose values differ between two configuration texts (`key=value`
// lines), as "key=THEIRS (rank 0: RANK0)" joined by "; "; "(unset)" for a key
// one side lacks. Empty when they are equal.
std::string config_differences(const std::string& theirs, const std::string& rank0);

}  // namespace slowpipe::dist
