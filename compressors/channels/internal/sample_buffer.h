// AQ-SGD's per-sample buffers m(xi): one fp16 row per sample id, held in memory
// or in a memory-mapped file on disk (as the reference implementation did, to
// spare RAM: pages are only resident while touched). One SampleBuffer is one
// side's copy (sender or receiver); AQ-SGD keeps two.
//
// Rows are allocated at the first use, when the per-sample size is known. In
// memory the buffer grows with the largest id seen when the sample count is not
// known (0); on disk the sample count must be given. The disk file is created
// in `dir` and removed when the buffer is destroyed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compressors/codecs/aq_store.h"
#include "compressors/channels/state_dict.h"

namespace slowpipe::compressors {

class SampleBuffer {
 public:
  // path: the file of the disk store.
  SampleBuffer(AqStore store, std::string path, int64_t num_samples);
  ~SampleBuffer();
  SampleBuffer(const SampleBuffer&) = delete;
  SampleBuffer& operator=(const SampleBuffer&) = delete;

  // Fixes the per-sample element count (first call) or checks it (later calls).
  void ensure(int64_t per_sample);
  // Row of sample `id` (fp16 bits); throws UsageError for an id out of range.
  uint16_t* row(int64_t id);
  const uint16_t* row(int64_t id) const;
  bool seen(int64_t id) const {
    return id >= 0 && id < static_cast<int64_t>(seen_.size()) && seen_[id];
  }
  void mark_seen(int64_t id);
  int64_t per_sample() const { return per_sample_; }
  // Bytes of fp16 rows reserved (file size on disk).
  uint64_t bytes() const;
  const std::string& path() const { return path_; }

  // Checkpoints: the per-sample size, the capacity and the rows of the samples
  // seen (fp16, [seen, per_sample]) with their ids; unseen rows are never read.
  // load_state writes the rows back into this buffer (into the file on disk).
  void save_state(const std::string& prefix, StateDict& out) const;
  void load_state(const std::string& prefix, const StateDict& in);

 private:
  void grow(int64_t samples);
  AqStore store_;
  std::string path_;
  int64_t num_samples_ = 0;
  int64_t capacity_ = 0;  // rows allocated
  int64_t per_sample_ = -1;
  std::vector<uint16_t> memory_;
  std::vector<uint8_t> seen_;
  int fd_ = -1;
  void* map_ = nullptr;
  uint64_t map_bytes_ = 0;
};

}  // namespace slowpipe::compressors
