// The simulator's own configuration: the run, the distributed layout, the
// pipeline, the optimizer and evaluation. Each struct has defaults and a
// describe_options() that binds its fields to dotted keys; train_config.h
// gathers them (with the models', compressors' and netmodel's) into one
// OptionSet. Plain C++ (slowpipe::config, no libtorch), so that sweeps resolve
// points in the light front.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/options.h"

namespace slowpipe::config {

struct RunConfig {
  uint64_t seed = 1;
  int64_t steps = 0;  // optimizer steps; 0 = run.epochs full epochs
  int epochs = 1;     // used when steps = 0
  std::string out = "results/run.h5";
  std::string label;  // plot label; empty = derived from the config
  bool overwrite = false;
  int threads = 1;                 // libtorch intra-op threads (1 is fastest on 2 cores)
  std::string kernels = "native";  // native|portable CPU kernels (kernel_policy.h)
  int flush_every = 10;            // run-log rows between flushes
  std::string progress = "auto";   // auto|line|plain|none
  std::string save = "";           // checkpoint written at the end of the run
  std::string device = "cpu";      // cpu|cuda|cuda:N
  std::string dtype = "fp32";      // fp32|bf16 (autocast: bf16 matmuls, fp32 master weights)
  int warmup_passes = 1;           // untimed forward+backward passes before step 1
  int64_t trace_every = 0;         // store a step's op trace every N steps (0 = never)
  // Resume checkpoints: every N steps (> 0), kCheckpointAuto (time-budgeted: at
  // most ~2% of the run's wall time) or kCheckpointOff.
  int64_t checkpoint_every = kCheckpointAuto;
  int checkpoint_keep = 2;  // newest checkpoints kept
  static constexpr int64_t kCheckpointAuto = 0;
  static constexpr int64_t kCheckpointOff = -1;
};
void describe_options(RunConfig& c, OptionSet& o);

// A distributed run (distributed/, docs/distributed.md): one process per (replica,
// stage), rank = replica * stages + stage. world_size = 0: one process (the
// default). The torchrun variables RANK, WORLD_SIZE, MASTER_ADDR and
// MASTER_PORT set these keys when they are not given (cli/cmd_train.cpp).
struct DistConfig {
  int world_size = 0;
  int rank = 0;
  std::string master_addr = "127.0.0.1";  // where rank 0 serves the rendezvous store
  int master_port = 29500;
  double timeout_s = 30;         // rendezvous, and silence after which a rank counts as dead
  std::string backend = "auto";  // auto|gloo|nccl (auto: nccl on CUDA devices, else gloo)
  bool verbose = false;          // c10d's own log lines (glog) on stderr
  bool enabled() const { return world_size > 0; }
};
void describe_options(DistConfig& c, OptionSet& o);

struct PipelineConfig {
  int stages = 4;                  // pipeline devices per replica
  std::string cuts;                // "2,4,6": first block of chunks 1..C-1; empty = balanced
  std::string balance = "params";  // params|time
  int microbatches = 1;
  std::string schedule = "gpipe";  // a name of netmodel::schedule_registry()
  int virtual_stages = 1;          // model chunks per stage (interleaved schedules)
  int replicas = 1;
  int batch_size = 16;  // global batch (all replicas, all micro-batches)
};
void describe_options(PipelineConfig& c, OptionSet& o);
// Throws UsageError when the batch does not split evenly or the schedule
// cannot run this layout (virtual stages on a schedule without them, or on one
// stage; an interleaved M that is not a multiple of S).
void validate(const PipelineConfig& c);

struct OptimConfig {
  std::string name = "adamw";         // config/optimizer_list.h
  double lr = 1e-3;                   // muon: the hidden matrices' (Muon's) rate
  double momentum = 0.9;              // SGD
  double beta1 = 0.9, beta2 = 0.999;  // AdamW (muon: its AdamW groups)
  double weight_decay = 0.0;          // muon: its AdamW groups'
  double clip = 1.0;                  // max global gradient norm; 0 = off
  int64_t warmup_steps = 0;
  std::string schedule = "cosine";  // config/optim_registry.cpp (after warm-up)
  double min_lr_ratio = 0.1;        // final lr = lr * min_lr_ratio
  double cooldown_fraction = 0.7;   // stable-linear: the decaying last fraction
  // muon (sim/optimizers/muon.cpp, docs/optimizers.md); defaults: Protocol
  // NanoGPT's train_gpt.py.
  std::string muon_variant = "benchmark";  // benchmark|canonical: the Newton-Schulz iteration
  double muon_momentum = 0.95;             // Nesterov momentum of the hidden matrices
  double muon_momentum_start = 0.85;       // where the momentum warm-up starts
  int64_t muon_momentum_warmup = 0;        // steps of the linear momentum ramp; 0 = none
  double muon_weight_decay = 0.05;         // decoupled, of the hidden matrices
  double muon_embed_lr = 0.7, muon_head_lr = 0.004, muon_scalar_lr = 0.015;  // AdamW groups
  // The Stiefel step of ParamRole::kStiefel parameters, whatever optim.name is
  // (sim/internal/stiefel.h, docs/optimizers.md "The Stiefel step").
  double stiefel_lr_scale = 1.0;  // its rate = the scheduled lr x this; > 0
  double stiefel_momentum = 0.9;  // momentum of its tangent steps; [0, 1)
  // The direction it steps along: "momentum" (the tangent momentum itself) or
  // "msign" (its orthogonal polar factor, re-projected: steps of spectral
  // size lr whatever the gradient's scale).
  std::string stiefel_direction = "momentum";
};
void describe_options(OptimConfig& c, OptionSet& o);

struct EvalConfig {
  int64_t every = 50;      // steps between evaluations; 0 = only at the end
  int64_t batches = 8;     // validation batches per evaluation; 0 = whole split
  bool compressed = true;  // also evaluate with the channels' codecs active
  bool at_start = true;    // also evaluate at step 0, before any training
};
void describe_options(EvalConfig& c, OptionSet& o);

}  // namespace slowpipe::config
