// Deterministic epoch permutations (see sampler.h).
#include "models/torch/sampler.h"

#include <algorithm>
#include <random>
#include <string>

#include "common/errors.h"

namespace slowpipe::models {
namespace {

// SplitMix64 finaliser: spreads (seed, epoch) into an RNG seed.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Uniform in [0, bound) without modulo bias (rejection sampling).
uint64_t bounded(std::mt19937_64& rng, uint64_t bound) {
  const uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
  uint64_t r;
  do {
    r = rng();
  } while (r >= limit);
  return r % bound;
}

}  // namespace

EpochSampler::EpochSampler(int64_t size, int64_t batch_size, uint64_t seed, bool shuffle,
                           bool drop_last)
    : size_(size), batch_size_(batch_size), seed_(seed), shuffle_(shuffle), drop_last_(drop_last) {
  if (size < 1) throw UsageError("the training split is empty: nothing to sample");
  if (batch_size < 1) {
    throw UsageError("batch size must be at least 1 (got " + std::to_string(batch_size) + ")");
  }
  if (batches_per_epoch() < 1) {
    throw UsageError("a training split of " + std::to_string(size) +
                     " samples gives no full batch of " + std::to_string(batch_size) +
                     " (drop_last)");
  }
  order_ = order(0);
}

int64_t EpochSampler::batches_per_epoch() const {
  return drop_last_ ? size_ / batch_size_ : (size_ + batch_size_ - 1) / batch_size_;
}

std::vector<int64_t> EpochSampler::order(int64_t epoch) const {
  std::vector<int64_t> out(static_cast<size_t>(size_));
  for (int64_t i = 0; i < size_; ++i) out[static_cast<size_t>(i)] = i;
  if (!shuffle_) return out;
  std::mt19937_64 rng(mix(seed_ ^ mix(static_cast<uint64_t>(epoch))));
  for (size_t i = out.size() - 1; i > 0; --i) {
    std::swap(out[i], out[bounded(rng, i + 1)]);
  }
  return out;
}

void EpochSampler::seek(int64_t epoch, int64_t batch) {
  if (epoch < 0 || batch < 0 || batch >= batches_per_epoch()) {
    throw UsageError("cannot resume at epoch " + std::to_string(epoch) + ", batch " +
                     std::to_string(batch) + " (" + std::to_string(batches_per_epoch()) +
                     " batches per epoch)");
  }
  if (epoch != epoch_) order_ = order(epoch);
  epoch_ = epoch;
  batch_ = batch;
}

SampledBatch EpochSampler::next() {
  SampledBatch b;
  b.epoch = epoch_;
  b.index_in_epoch = batch_;
  const int64_t lo = batch_ * batch_size_;
  const int64_t hi = std::min(size_, lo + batch_size_);
  b.indices.assign(order_.begin() + lo, order_.begin() + hi);
  if (++batch_ == batches_per_epoch()) {
    ++epoch_;
    batch_ = 0;
    order_ = order(epoch_);
  }
  return b;
}

}  // namespace slowpipe::models
