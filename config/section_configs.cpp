// Option bindings for the run, distributed, pipeline, optimizer and evaluation
// configuration structs.
#include "config/section_configs.h"

#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string>

#include "common/errors.h"
#include "common/units.h"
#include "config/optim_registry.h"
#include "pipeline/schedule.h"

namespace slowpipe::config {
namespace {

// run.checkpoint_every and run.checkpoint_keep: when resume checkpoints are
// written, and how many are kept.
void describe_checkpoint_options(RunConfig& c, OptionSet& o) {
  o.add_custom(
      "run.checkpoint_every", "auto|off|N",
      "resume checkpoints: every N steps, auto (time-budgeted, ~2% of the run) or off",
      [&c](const std::string& v) {
        if (v == "auto") {
          c.checkpoint_every = RunConfig::kCheckpointAuto;
        } else if (v == "off") {
          c.checkpoint_every = RunConfig::kCheckpointOff;
        } else {
          const int64_t n = parse_int("run.checkpoint_every", v);
          if (n < 1) {
            throw UsageError("bad value for 'run.checkpoint_every': '" + v +
                             "' (expected auto, off or a step count >= 1)");
          }
          c.checkpoint_every = n;
        }
      },
      [&c] {
        if (c.checkpoint_every == RunConfig::kCheckpointAuto) return std::string("auto");
        if (c.checkpoint_every == RunConfig::kCheckpointOff) return std::string("off");
        return std::to_string(c.checkpoint_every);
      });
  o.add("run.checkpoint_keep", c.checkpoint_keep, "resume checkpoints kept (newest first)", 1,
        1000);
}

// The text OptionSet shows for a float: the shortest that reads back the same.
std::string float_text(double v) {
  for (int precision = 1; precision < 17; ++precision) {
    std::ostringstream os;
    os.precision(precision);
    os << v;
    if (std::strtod(os.str().c_str(), nullptr) == v) return os.str();
  }
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

// optim.stiefel_*: the Stiefel step of ParamRole::kStiefel parameters, whatever
// optim.name is (sim/internal/stiefel.h, docs/optimizers.md "The Stiefel step").
// Both bounds are strict on one side, so the checks are written here.
void describe_stiefel_options(OptimConfig& c, OptionSet& o) {
  o.add_custom(
      "optim.stiefel_lr_scale", "float",
      "Stiefel step (of the parameters a model keeps orthonormal, whatever optim.name): its rate "
      "is the scheduled lr x this; > 0",
      [&c](const std::string& v) {
        const double x = parse_float("optim.stiefel_lr_scale", v);
        if (!(x > 0) || !std::isfinite(x)) {
          throw UsageError("bad value for 'optim.stiefel_lr_scale': " + v +
                           " (expected a finite number > 0)");
        }
        c.stiefel_lr_scale = x;
      },
      [&c] { return float_text(c.stiefel_lr_scale); });
  o.add_custom(
      "optim.stiefel_momentum", "float", "Stiefel step: momentum of its tangent steps, in [0, 1)",
      [&c](const std::string& v) {
        const double x = parse_float("optim.stiefel_momentum", v);
        if (!(x >= 0 && x < 1)) {
          throw UsageError("bad value for 'optim.stiefel_momentum': " + v +
                           " (expected 0 <= momentum < 1)");
        }
        c.stiefel_momentum = x;
      },
      [&c] { return float_text(c.stiefel_momentum); });
  o.add_choice("optim.stiefel_direction", c.stiefel_direction, {"momentum", "msign"},
               "Stiefel step: step along the tangent momentum (momentum) or along its "
               "orthogonal polar factor, a step of spectral size lr whatever the gradient's "
               "scale (msign; docs/optimizers.md)");
}

}  // namespace

void describe_options(RunConfig& c, OptionSet& o) {
  o.add_custom(
      "run.seed", "int", "seed of parameters, data order and stochastic codecs",
      [&c](const std::string& v) {
        const int64_t x = parse_int("run.seed", v);
        if (x < 0) throw UsageError("bad value for 'run.seed': must be >= 0");
        c.seed = static_cast<uint64_t>(x);
      },
      [&c] { return std::to_string(c.seed); });
  o.add("run.steps", c.steps, "optimizer steps to run (0 = run.epochs whole epochs)", 0);
  o.add("run.epochs", c.epochs, "epochs to run when run.steps = 0", 1, 100000);
  o.add_nonempty("run.out", c.out, "HDF5 run log to write (relative to the working directory)");
  o.add("run.label", c.label, "label of this run in plots (empty = derived from the config)");
  o.add("run.overwrite", c.overwrite, "replace run.out if it exists");
  o.add("run.threads", c.threads, "libtorch intra-op threads", 1, 256);
  o.add_choice("run.kernels", c.kernels, {"native", "portable"},
               "CPU kernels: native = the fastest for this CPU (losses may differ across "
               "CPUs), portable = the same on every x86-64 CPU with AVX2+FMA "
               "(docs/reproducibility.md)");
  o.add("run.flush_every", c.flush_every, "run-log rows between flushes to disk", 1, 100000);
  o.add_choice("run.progress", c.progress, {"auto", "line", "plain", "none"},
               "progress display: auto = one updating line on a terminal, plain lines otherwise");
  o.add("run.save", c.save, "write a model checkpoint here at the end (for fine-tuning)");
  o.add_custom(
      "run.device", "cpu|cuda|cuda:N", "libtorch device for every stage",
      [&c](const std::string& v) {
        if (v != "cpu" && v.rfind("cuda", 0) != 0) {
          throw UsageError("bad value for 'run.device': '" + v +
                           "' (expected cpu, cuda or cuda:N)");
        }
        c.device = v;
      },
      [&c] { return c.device; });
  o.add_choice("run.dtype", c.dtype, {"fp32", "bf16"},
               "what the stages compute in: fp32, or bf16 autocast (bf16 matmuls, fp32 master "
               "weights and optimizer state; the run log states what this CPU computes; "
               "docs/compute-clock.md)");
  o.add("run.warmup_passes", c.warmup_passes,
        "untimed forward+backward passes before the first step (no update; keeps warm-up out of "
        "the timings)",
        0, 100);
  describe_checkpoint_options(c, o);
  o.add("trace.every", c.trace_every,
        "store a step's op trace (JSON) in the run log every N steps (0 = never)", 0);
}

void describe_options(DistConfig& c, OptionSet& o) {
  o.add("dist.world_size", c.world_size,
        "processes of a distributed run, replicas x stages (0 = one process; default: "
        "$WORLD_SIZE)",
        0, 65536);
  o.add("dist.rank", c.rank,
        "this process's rank (default: $RANK); rank = replica * stages + stage", 0, 65535);
  o.add_nonempty("dist.master_addr", c.master_addr,
                 "host of rank 0's rendezvous store (default: $MASTER_ADDR, else 127.0.0.1)");
  o.add("dist.master_port", c.master_port,
        "port of rank 0's rendezvous store (default: $MASTER_PORT, else 29500)", 1, 65535);
  o.add_custom(
      "dist.timeout", "duration",
      "rendezvous timeout, and how long a silent rank may stay silent before the run stops",
      [&c](const std::string& v) {
        const double t = parse_duration_s("dist.timeout", v);
        if (t <= 0) throw UsageError("bad value for 'dist.timeout': must be > 0");
        c.timeout_s = t;
      },
      [&c] { return format_duration(c.timeout_s); });
  o.add_choice("dist.backend", c.backend, {"auto", "gloo", "nccl"},
               "c10d backend: auto = nccl for CUDA devices where built in, else gloo");
  o.add("dist.verbose", c.verbose,
        "print c10d's own log lines (glog warnings and errors; slowpipe's messages say the "
        "same in one line); a GLOG_minloglevel in the environment wins");
}

void describe_options(PipelineConfig& c, OptionSet& o) {
  o.add("pipeline.stages", c.stages, "pipeline stages S the model is cut into", 1, 1024);
  o.add_custom(
      "pipeline.cuts", "int list",
      "first block of chunks 1..C-1 (C = stages x virtual stages), e.g. 2,4,6 (empty = balanced)",
      [&c](const std::string& v) {
        (void)parse_int_list("pipeline.cuts", v);  // validate the syntax now
        c.cuts = v;
      },
      [&c] { return c.cuts; });
  o.add_choice("pipeline.balance", c.balance, {"params", "time"},
               "how stages are balanced when no cuts are given");
  o.add("pipeline.microbatches", c.microbatches, "micro-batches M per batch", 1, 4096);
  o.add_choice("pipeline.schedule", c.schedule, netmodel::schedule_names(),
               "pipeline schedule (docs/schedules.md)");
  o.add("pipeline.virtual_stages", c.virtual_stages,
        "model chunks per stage, C = S x v (interleaved schedule)", 1, 64);
  o.add("pipeline.replicas", c.replicas, "data-parallel replicas D", 1, 256);
  o.add("pipeline.batch_size", c.batch_size, "global batch size (all replicas)", 1, 1 << 20);
}

void validate(const PipelineConfig& c) {
  const int per = c.replicas * c.microbatches;
  if (c.batch_size % per != 0) {
    throw UsageError("pipeline.batch_size = " + std::to_string(c.batch_size) +
                     " does not split into replicas x microbatches = " + std::to_string(per) +
                     " equal micro-batches");
  }
  if (c.virtual_stages > 1 && c.stages < 2) {
    throw UsageError("pipeline.virtual_stages = " + std::to_string(c.virtual_stages) +
                     " needs pipeline.stages >= 2 (chunks on one device are one stage)");
  }
  (void)netmodel::make_schedule(c.schedule, c.stages, c.microbatches, c.virtual_stages);
}

void describe_options(OptimConfig& c, OptionSet& o) {
  o.add_choice("optim.name", c.name, optimizer_registry().names(), "optimizer");
  o.add("optim.lr", c.lr, "peak learning rate", 0.0, 100.0);
  o.add("optim.momentum", c.momentum, "SGD momentum", 0.0, 1.0);
  o.add("optim.beta1", c.beta1, "AdamW beta1", 0.0, 1.0);
  o.add("optim.beta2", c.beta2, "AdamW beta2", 0.0, 1.0);
  o.add("optim.weight_decay", c.weight_decay, "weight decay (decoupled for AdamW)", 0.0, 10.0);
  o.add("optim.clip", c.clip, "max global gradient norm (0 = no clipping)", 0.0, 1e9);
  o.add("optim.warmup_steps", c.warmup_steps, "linear learning-rate warm-up steps", 0);
  o.add_choice("optim.schedule", c.schedule, lr_schedule_registry().names(),
               "learning-rate decay after warm-up");
  o.add("optim.min_lr_ratio", c.min_lr_ratio, "final lr as a fraction of optim.lr", 0.0, 1.0);
  o.add("optim.cooldown_fraction", c.cooldown_fraction,
        "stable-linear: the last fraction of the decay steps, where the rate falls", 0.0, 1.0);
  o.add_choice("optim.muon_variant", c.muon_variant, {"benchmark", "canonical"},
               "muon: Newton-Schulz iteration of Protocol NanoGPT (12 steps) or KellerJordan/Muon "
               "(5 steps)");
  o.add("optim.muon_momentum", c.muon_momentum, "muon: Nesterov momentum of the hidden matrices",
        0.0, 0.999999);
  o.add("optim.muon_momentum_start", c.muon_momentum_start,
        "muon: the momentum at step 0 when optim.muon_momentum_warmup > 0", 0.0, 0.999999);
  o.add("optim.muon_momentum_warmup", c.muon_momentum_warmup,
        "muon: steps over which the momentum rises linearly from optim.muon_momentum_start to "
        "optim.muon_momentum (the ReparamSSN record: 500 of 9500); 0 = constant",
        0);
  o.add("optim.muon_weight_decay", c.muon_weight_decay,
        "muon: decoupled weight decay of the hidden matrices", 0.0, 10.0);
  o.add("optim.muon_embed_lr", c.muon_embed_lr, "muon: peak rate of the embeddings (AdamW)", 0.0,
        100.0);
  o.add("optim.muon_head_lr", c.muon_head_lr, "muon: peak rate of the output head (AdamW)", 0.0,
        100.0);
  o.add("optim.muon_scalar_lr", c.muon_scalar_lr,
        "muon: peak rate of gains, biases and other parameters (AdamW)", 0.0, 100.0);
  describe_stiefel_options(c, o);
}

void describe_options(EvalConfig& c, OptionSet& o) {
  o.add("eval.every", c.every, "steps between evaluations (0 = only at the end)", 0);
  o.add("eval.batches", c.batches, "validation batches per evaluation (0 = whole split)", 0);
  o.add("eval.compressed", c.compressed, "also evaluate with the channels' codecs active");
  o.add("eval.at_start", c.at_start,
        "also evaluate at step 0, before any training (not repeated on resume)");
}

}  // namespace slowpipe::config
