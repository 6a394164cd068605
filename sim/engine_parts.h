// Pieces of a pipeline step shared by the single-process engine (engine.cpp)
// and the distributed one (distributed/dist_engine.cpp): op timing, trace ops, channel
// contexts and per-channel accounting. Internal to the engines.
#pragma once

#include <ATen/Tensor.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "compressors/channels/factory.h"
#include "netmodel/trace.h"
#include "sim/engine.h"

namespace slowpipe::sim {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0);

// CPU seconds of the calling thread: the clock of the calibrated compute model
// (netmodel/internal/calibrated_model.h). Unlike the wall clock it stops while the
// thread waits for a core, so it does not count the machine's other load.
double thread_cpu_now();

// Wall and thread-CPU seconds of one op.
struct OpTimer {
  Clock::time_point wall0 = Clock::now();
  double cpu0 = thread_cpu_now();
  double wall_s() const { return seconds_since(wall0); }
  double cpu_s() const { return thread_cpu_now() - cpu0; }
};

void add_transfer(ChannelSummary& sum, const compressors::TransferStats& st);

// The context of channel `name`; `salt` makes each channel's random streams its own:
// boundary b of replica r: r * 4096 + b; the gradient channel of stage s: r * 4096 + 2048 + s.
compressors::ChannelContext channel_context(const EngineSetup& setup, const std::string& name,
                                            uint64_t salt);

// Where a trace op runs: its device (stage position), model chunk, micro-batch
// (-1: per step) and replica; `peer` is the receiving device of a send.
struct OpSite {
  int device = 0;
  int chunk = 0;
  int microbatch = -1;
  int replica = 0;
  int peer = -1;
};

netmodel::TraceOp compute_op(netmodel::OpKind kind, const OpSite& site, const OpTimer& timer,
                             double flops);

// Kernels of one forward of blocks [begin, end) of `model`, counted from its
// structure, for the analytic launch floor (docs/netmodel.md, "Launch
// floor"): two per leaf module holding parameters (a Linear, LayerNorm,
// Embedding, convolution or GroupNorm: its own kernel and one element-wise
// kernel beside it: activation, residual add, dropout or reshape). A
// backward launches twice a forward's, each half of a split backward one
// forward's, an optimizer step one per parameter tensor.
int forward_kernels(const models::Model& model, size_t begin, size_t end);
// One micro-batch of `samples` samples through blocks [begin, end), kernel
// class by kernel class where the blocks describe themselves (GPT's), by
// FLOPs and kernels (the rule above) where not: what the shaped clock times.
netmodel::OpWork chunk_work(const models::Model& model, size_t begin, size_t end, int64_t samples);

// A message op (send or all-reduce) and its channel's accounting.
netmodel::TraceOp message_op(netmodel::OpKind kind, const OpSite& site, const at::Tensor& sent,
                             const compressors::TransferStats& st, ChannelSummary& sum);

bool all_finite(const at::Tensor& t);

// A stage's parameter gradients as one [1, N] tensor (zeros for a parameter
// without a gradient): what crosses a data-parallel gradient channel. Throws
// NonFiniteError naming the stage and replica when a value is not finite.
at::Tensor flat_gradient(const std::vector<at::Tensor>& params, int stage, int replica);
// Writes `flat` ([N] or [1, N], on the parameters' device) back as their gradients.
void set_gradients(const std::vector<at::Tensor>& params, const at::Tensor& flat);
// The momentum exchange's shard j of a flat [1, N] moment over D replicas, as
// (begin, length): [j * L, min(N, (j + 1) * L)) with L = ceil(N / D); both
// engines cut alike (docs/grad-sync.md).
std::pair<int64_t, int64_t> shard_range(int64_t n, int d, int j);

// OpenBLAS's thread pool size (found at run time; 1 for another BLAS).
int blas_threads();

// "step 3 (replica 1, micro-batch 0)" for error messages (`step` 0-based).
std::string where(int64_t step, int replica, int microbatch);

// rel_error and delta_norm: sums over transfers -> means.
void finish_means(std::vector<ChannelSummary>& v);

}  // namespace slowpipe::sim
