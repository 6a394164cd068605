// Configuration of compression for a run: which channel every pipeline boundary
// uses forward (activations) and backward (activation-gradients), which channel
// data-parallel replicas use for gradients, and AQ-SGD's buffer settings.
//
// Per-boundary overrides: compress.fw_at / compress.bw_at = "I:SPEC,I:SPEC",
// I = 0-based boundary index (boundary i sits between stage i and stage i+1),
// e.g. compress.fw_at=0:q4,2:aq(q8). Specs never contain ',' so the list splits
// on commas; each item splits at its first ':'.
//
// Plain C++ (library slowpipe::codecs, no libtorch): the checks use the spec
// registries of channel_spec.h, never a built channel.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "common/options.h"
#include "compressors/codecs/aq_store.h"
#include "compressors/codecs/channel_spec.h"
#include "compressors/codecs/grad_sync.h"

namespace slowpipe::compressors {

struct CompressConfig {
  // Parsed where they are set (ChannelSpec, channel_spec.h); they travel as such.
  ChannelSpec fw;  // compress.fw
  ChannelSpec bw;  // compress.bw
  // compress.grad (data-parallel gradients), resolved where it is set: as
  // given (grad.given(), compress.grad) and as gradients run (grad.resolved(),
  // the run log's compress.grad_spec; GradientSpec, channel_spec.h).
  GradientSpec grad;
  // What data-parallel replicas exchange (docs/grad-sync.md): "allreduce" =
  // each stage's gradient through compress.grad, averaged; "momentum" = each
  // replica's optimizer first moment through compress.grad, sharded across the
  // replicas parameter-server style (AQ-SGD's end-to-end compression), after
  // momentum_warmup_steps steps of "allreduce" with uncompressed gradients.
  GradSync grad_sync = GradSync::kAllReduce;
  int64_t momentum_warmup_steps = 100;
  std::map<int, ChannelSpec> fw_at, bw_at;  // per-boundary overrides
  int warmup_epochs = 0;                    // every boundary channel sends fp32 in [0, W)
  int aq_warmup_epochs = 1;                 // AQ-SGD: max(warmup_epochs, aq_warmup_epochs)
  AqStore aq_store = AqStore::kMemory;
  std::string aq_dir;  // "" = system temp folder

  const ChannelSpec& fw_for(int boundary) const;
  const ChannelSpec& bw_for(int boundary) const;
};

// Binds compress.fw, compress.bw, compress.grad, compress.grad_sync,
// compress.momentum_warmup_steps, compress.fw_at, compress.bw_at,
// compress.warmup_epochs, compress.aq_warmup_epochs, compress.aq_store, compress.aq_dir. Spec
// strings are validated when set (UsageError naming the key and the spec position).
void describe_options(CompressConfig& config, slowpipe::OptionSet& options);

// Everything about compression that can be checked before data is loaded, for
// a pipeline with `num_boundaries` boundaries (stages - 1): compress.fw_at and
// compress.bw_at name existing boundaries (0 .. num_boundaries-1); every
// boundary's forward and backward specs suit their roles (validate_role in
// channel_spec.h: topk:shared needs a sparsifying forward at that boundary); and,
// when `data_parallel` (replicas > 1), compress.grad can carry gradients (no
// aq(...), no topk:shared). Throws UsageError naming the key and the boundary.
void validate_compress_config(const CompressConfig& config, int num_boundaries, bool data_parallel);
// The boundary-index part alone.
void validate_boundary_overrides(const CompressConfig& config, int num_boundaries);

// Whether a spec runs AQ-SGD: its scheme keeps per-sample buffers (the scheme
// registry's keyed_by_sample).
bool uses_aq(const ChannelSpec& spec);
// Whether any boundary of `num_boundaries`, forward or backward, runs AQ-SGD.
bool uses_aq(const CompressConfig& config, int num_boundaries);

// "0:q4,2:q8" -> {0:"q4", 2:"q8"}; validates each spec. `key` names errors.
std::map<int, ChannelSpec> parse_boundary_specs(const std::string& key, const std::string& text,
                                                bool backward);
std::string format_boundary_specs(const std::map<int, ChannelSpec>& specs);

}  // namespace slowpipe::compressors
