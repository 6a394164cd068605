// The preflight of a training run (see preflight.h): every check, in train's
// order; the two that need libtorch come in from the caller.
#include "config/preflight.h"

#include <unistd.h>

#include <filesystem>
#include <string>

#include "common/errors.h"
#include "compressors/codecs/config.h"
#include "config/output_paths.h"
#include "netmodel/replay.h"
#include "netmodel/schedule_trace.h"
#include "runlog/runlog.h"

namespace slowpipe::config {
namespace {

namespace fs = std::filesystem;

// A log that a failed run left without a single row can be replaced: nothing
// in it would be lost.
bool replaceable_log(const std::string& path) {
  try {
    const auto attrs = runlog::read_attributes(path);
    const auto it = attrs.find("status");
    if (it == attrs.end() || it->second != "failed") return false;
    for (const auto& t : runlog::list_tables(path)) {
      if (runlog::read_table(path, t).rows() > 0) return false;
    }
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

void check_out(const RunConfig& run, bool resuming) {
  if (run.out.empty()) throw UsageError("run.out is empty: name the HDF5 run log to write");
  check_writable_target("run.out", run.out);
  std::error_code ec;
  const bool exists = fs::exists(run.out, ec);
  if (resuming) {
    if (!exists) throw UsageError("--resume " + run.out + ": no such run log");
    return;
  }
  if (exists && !run.overwrite && !replaceable_log(run.out)) {
    throw UsageError(run.out + " exists (pass --resume " + run.out +
                     " to continue it, or --set run.overwrite=true to replace it)");
  }
  if (!run.save.empty()) check_writable_target("run.save", run.save);
}

// compress.grad and compress.grad_sync shape what data-parallel replicas
// exchange; with one replica there is no exchange, and a setting that would do
// nothing is refused rather than ignored.
void check_gradient_channel(const TrainConfig& c) {
  if (c.pipeline.replicas > 1) return;
  const std::string why =
      ", but pipeline.replicas = 1: with one replica no gradients are exchanged, so the setting "
      "would do nothing (set pipeline.replicas >= 2, or leave it out)";
  if (c.compress.grad.given().text() != "none") {
    throw UsageError("compress.grad = " + c.compress.grad.given().text() +
                     " compresses what data-parallel replicas exchange" + why);
  }
  if (c.compress.grad_sync != compressors::GradSync::kAllReduce) {
    throw UsageError(std::string("compress.grad_sync = ") +
                     compressors::grad_sync_name(c.compress.grad_sync) +
                     " chooses what data-parallel replicas exchange" + why);
  }
}

void check_compression(const TrainConfig& c) {
  check_gradient_channel(c);
  // Boundaries lie between model chunks (stages x virtual stages).
  const int boundaries = c.pipeline.stages * c.pipeline.virtual_stages - 1;
  compressors::validate_compress_config(c.compress, boundaries, c.pipeline.replicas > 1);
  // Forward or backward: an AQ-SGD channel in either direction keeps buffers.
  if (c.compress.aq_store == compressors::AqStore::kDisk &&
      compressors::uses_aq(c.compress, boundaries)) {
    const std::string dir =
        c.compress.aq_dir.empty() ? fs::temp_directory_path().string() : c.compress.aq_dir;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      throw UsageError("compress.aq_dir = " + dir + " is not an existing folder");
    }
    if (access(dir.c_str(), W_OK | X_OK) != 0) {
      throw UsageError("compress.aq_dir = " + dir + " is not writable");
    }
  }
}

// Replays a synthetic step of this pipeline layout on the configured network, so
// a network that cannot carry it (a bad net.links pair, a zero-rate link) is
// reported now rather than after the data is loaded.
void check_network(const TrainConfig& c) {
  const netmodel::StepTrace trace = netmodel::build_trace(
      c.pipeline.schedule, c.pipeline.stages, c.pipeline.microbatches, c.pipeline.replicas,
      [](netmodel::TraceOp& op) {
        op.compute_s = 1e-3;
        op.bytes = 1000;
      },
      c.pipeline.virtual_stages);
  try {
    netmodel::Simulator probe(timed_net(c));  // a shaped clock's device must have run.dtype
    (void)probe.replay(trace);
  } catch (const DataError& e) {
    throw UsageError(std::string("the network (net.*) cannot carry this pipeline: ") + e.what());
  }
}

// A distributed run (docs/distributed.md): one process per (replica, stage).
void check_distributed(const TrainConfig& c) {
  const DistConfig& d = c.dist;
  if (!d.enabled()) return;
  const int world = c.pipeline.stages * c.pipeline.replicas;
  if (d.world_size != world)
    throw UsageError("dist.world_size = " + std::to_string(d.world_size) +
                     " processes, but pipeline.stages x pipeline.replicas = " +
                     std::to_string(c.pipeline.stages) + " x " +
                     std::to_string(c.pipeline.replicas) + " = " + std::to_string(world) +
                     " (one process per stage and replica)");
  if (d.rank >= d.world_size)
    throw UsageError("dist.rank = " + std::to_string(d.rank) +
                     " is not below dist.world_size = " + std::to_string(d.world_size));
  if (!c.run.save.empty())
    throw UsageError("run.save: distributed runs do not write model checkpoints yet");
}

}  // namespace

void preflight(const TrainConfig& c, bool resuming, const LibtorchChecks& libtorch) {
  validate(c.pipeline);
  check_distributed(c);
  if (libtorch.device) libtorch.device(c.run.device);
  // Only rank 0 of a distributed run writes the log.
  if (!c.dist.enabled() || c.dist.rank == 0) check_out(c.run, resuming);
  check_compression(c);
  check_network(c);
  if (libtorch.model) libtorch.model(c);
}

}  // namespace slowpipe::config
