// EpochSampler: the order in which training samples are visited. Each epoch is
// a permutation of [0, size) drawn from (seed, epoch) alone - Fisher-Yates over
// std::mt19937_64 with unbiased bounded draws, so orders are identical on every
// platform and a run can resume at any (epoch, batch) without replaying earlier
// epochs. Batches are consecutive slices of B indices; the last one is short
// unless drop_last. Plain C++: no libtorch.
#pragma once

#include <cstdint>
#include <vector>

namespace slowpipe::models {

struct SampledBatch {
  int64_t epoch = 0;           // 0-based epoch the batch belongs to
  int64_t index_in_epoch = 0;  // 0-based batch index within the epoch
  std::vector<int64_t> indices;
};

class EpochSampler {
 public:
  // Throws UsageError when size < 1, batch_size < 1, or drop_last leaves no batch.
  EpochSampler(int64_t size, int64_t batch_size, uint64_t seed, bool shuffle = true,
               bool drop_last = false);

  // The next batch; after the last batch of an epoch, moves on to the next epoch.
  SampledBatch next();
  // Epoch and batch index of the batch next() returns next.
  int64_t epoch() const { return epoch_; }
  int64_t batch_in_epoch() const { return batch_; }
  int64_t batches_per_epoch() const;
  // Resumes at (epoch, batch). Throws UsageError when batch is out of range.
  void seek(int64_t epoch, int64_t batch);
  // The visiting order of one epoch (identity when shuffle is off).
  std::vector<int64_t> order(int64_t epoch) const;

  int64_t size() const { return size_; }
  int64_t batch_size() const { return batch_size_; }

 private:
  int64_t size_, batch_size_;
  uint64_t seed_;
  bool shuffle_, drop_last_;
  int64_t epoch_ = 0, batch_ = 0;
  std::vector<int64_t> order_;  // order(epoch_)
};

}  // namespace slowpipe::models
