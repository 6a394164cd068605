// ShardSampler: the global batch of a data-parallel run, drawn as data
// parallelism does it. Replica r owns a fixed, contiguous shard of the training
// split, [r * shard_size, (r + 1) * shard_size) with shard_size = N / D (the
// N mod D samples left over are never visited), and walks its own shard in
// epoch permutations of B / D samples per batch. The global batch is the
// concatenation of the replicas' batches in replica order, which is how
// PipelineEngine::train_step splits it again.
//
// Why fixed shards: AQ-SGD keeps one buffer m(xi) per sample on each replica. A
// sample must always meet the replica whose buffer knows it; with batches split
// by position a sample lands on a different replica each epoch and reads a cold
// or stale buffer (docs/codec-spec.md, "AQ-SGD with replicas").
//
// With D = 1 the sampler is exactly models::EpochSampler(N, B, seed) (same
// batches in the same order). Plain C++: no libtorch.
#pragma once

#include <cstdint>
#include <vector>

#include "models/torch/sampler.h"

namespace slowpipe::sim {

class ShardSampler {
 public:
  // Throws UsageError when B is not divisible by D or a shard gives no full batch.
  ShardSampler(int64_t train_samples, int64_t batch_size, int replicas, uint64_t seed);

  // The next global batch: replica 0's B/D indices, then replica 1's, ...
  models::SampledBatch next();
  // Every replica's sampler at (epoch, batch) (resume).
  void seek(int64_t epoch, int64_t batch);
  int64_t batches_per_epoch() const { return samplers_.front().batches_per_epoch(); }
  // Samples per replica shard (N when D = 1).
  int64_t shard_size() const { return shard_size_; }
  int replicas() const { return static_cast<int>(samplers_.size()); }

 private:
  int64_t shard_size_;
  std::vector<models::EpochSampler> samplers_;  // per replica, over [0, shard_size)
};

}  // namespace slowpipe::sim
