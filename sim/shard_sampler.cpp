// Fixed data shards per replica (see shard_sampler.h).
#include "sim/internal/shard_sampler.h"

#include <string>

#include "common/errors.h"

namespace slowpipe::sim {

ShardSampler::ShardSampler(int64_t train_samples, int64_t batch_size, int replicas,
                           uint64_t seed)
    : shard_size_(replicas > 0 ? train_samples / replicas : 0) {
  if (replicas < 1) throw UsageError("pipeline.replicas must be at least 1");
  if (batch_size % replicas != 0) {
    throw UsageError("pipeline.batch_size = " + std::to_string(batch_size) +
                     " does not split into " + std::to_string(replicas) + " replicas");
  }
  const int64_t per_replica = batch_size / replicas;
  if (shard_size_ < per_replica) {
    throw UsageError("the training split has " + std::to_string(train_samples) +
                     " samples: a shard of " + std::to_string(shard_size_) + " per replica (" +
                     std::to_string(replicas) + " replicas) is smaller than its batch of " +
                     std::to_string(per_replica));
  }
  for (int r = 0; r < replicas; ++r) {
    // D = 1 keeps the single-replica stream; replicas draw independent orders.
    const uint64_t s = r == 0 ? seed : seed ^ (0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(r));
    samplers_.emplace_back(shard_size_, per_replica, s, /*shuffle=*/true, /*drop_last=*/true);
  }
}

models::SampledBatch ShardSampler::next() {
  models::SampledBatch out;
  for (size_t r = 0; r < samplers_.size(); ++r) {
    models::SampledBatch b = samplers_[r].next();
    if (r == 0) {
      out.epoch = b.epoch;
      out.index_in_epoch = b.index_in_epoch;
    }
    const int64_t offset = static_cast<int64_t>(r) * shard_size_;
    for (int64_t i : b.indices) out.indices.push_back(offset + i);
  }
  return out;
}

void ShardSampler::seek(int64_t epoch, int64_t batch) {
  for (auto& s : samplers_) s.seek(epoch, batch);
}

}  // namespace slowpipe::sim
