// fp16 per-sample rows in a std::vector or a MAP_SHARED file mapping.
#include "compressors/channels/internal/sample_buffer.h"

#include <ATen/ATen.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/errors.h"

namespace slowpipe::compressors {

SampleBuffer::SampleBuffer(AqStore store, std::string path, int64_t num_samples)
    : store_(store), path_(std::move(path)), num_samples_(num_samples) {
  if (store_ == AqStore::kDisk && num_samples_ <= 0)
    throw UsageError("compress.aq_store=disk needs the number of samples of the data set");
}

SampleBuffer::~SampleBuffer() {
  if (map_) munmap(map_, map_bytes_);
  if (fd_ >= 0) {
    close(fd_);
    unlink(path_.c_str());
  }
}

void SampleBuffer::ensure(int64_t per_sample) {
  if (per_sample_ == per_sample) return;
  if (per_sample_ >= 0)
    throw UsageError("aq: per-sample size changed from " + std::to_string(per_sample_) + " to " +
                     std::to_string(per_sample) +
                     " elements (AQ-SGD needs fixed activation shapes)");
  per_sample_ = per_sample;
  if (store_ == AqStore::kDisk) {
    std::error_code ec;
    std::filesystem::path p(path_);
    if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
    fd_ = open(path_.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd_ < 0)
      throw UsageError("compress.aq_dir: cannot create '" + path_ + "': " + std::strerror(errno));
    map_bytes_ = static_cast<uint64_t>(num_samples_) * static_cast<uint64_t>(per_sample_) * 2;
    if (map_bytes_ > 0) {
      if (ftruncate(fd_, static_cast<off_t>(map_bytes_)) != 0)
        throw UsageError("compress.aq_dir: cannot size '" + path_ + "': " + std::strerror(errno));
      map_ = mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
      if (map_ == MAP_FAILED) {
        map_ = nullptr;
        throw UsageError("compress.aq_dir: cannot map '" + path_ + "': " + std::strerror(errno));
      }
    }
    capacity_ = num_samples_;
    seen_.assign(static_cast<size_t>(num_samples_), 0);
  } else if (num_samples_ > 0) {
    grow(num_samples_);
  }
}

void SampleBuffer::grow(int64_t samples) {
  capacity_ = samples;
  memory_.resize(static_cast<size_t>(capacity_ * per_sample_), 0);
  seen_.resize(static_cast<size_t>(capacity_), 0);
}

uint16_t* SampleBuffer::row(int64_t id) {
  if (id < 0 || (num_samples_ > 0 && id >= num_samples_))
    throw UsageError("aq: sample id " + std::to_string(id) + " outside [0, " +
                     std::to_string(num_samples_) + ")");
  if (id >= capacity_) grow(std::max<int64_t>(id + 1, capacity_ * 2));
  uint16_t* base = map_ ? static_cast<uint16_t*>(map_) : memory_.data();
  return base + id * per_sample_;
}

const uint16_t* SampleBuffer::row(int64_t id) const {
  if (id < 0 || id >= capacity_)
    throw UsageError("aq: sample id " + std::to_string(id) + " has no buffer row");
  const uint16_t* base = map_ ? static_cast<const uint16_t*>(map_) : memory_.data();
  return base + id * per_sample_;
}

void SampleBuffer::mark_seen(int64_t id) {
  row(id);  // range check and growth
  seen_[static_cast<size_t>(id)] = 1;
}

void SampleBuffer::save_state(const std::string& prefix, StateDict& out) const {
  put_int(out, prefix + "per_sample", per_sample_);
  put_int(out, prefix + "capacity", capacity_);
  std::vector<int64_t> ids;
  for (int64_t id = 0; id < static_cast<int64_t>(seen_.size()); ++id)
    if (seen_[static_cast<size_t>(id)]) ids.push_back(id);
  const auto count = static_cast<int64_t>(ids.size());
  at::Tensor id_t = at::empty({count}, at::kLong);
  std::copy(ids.begin(), ids.end(), id_t.data_ptr<int64_t>());
  const int64_t per = std::max<int64_t>(per_sample_, 0);
  at::Tensor rows = at::empty({count, per}, at::kHalf);
  auto* dst = reinterpret_cast<uint16_t*>(rows.data_ptr<at::Half>());
  for (int64_t i = 0; i < count; ++i)
    std::memcpy(dst + i * per, row(ids[static_cast<size_t>(i)]), 2 * static_cast<size_t>(per));
  out[prefix + "seen_ids"] = id_t;
  out[prefix + "rows"] = rows;
}

void SampleBuffer::load_state(const std::string& prefix, const StateDict& in) {
  const int64_t per = get_int(in, prefix + "per_sample");
  const int64_t capacity = get_int(in, prefix + "capacity");
  at::Tensor ids = get_tensor(in, prefix + "seen_ids", at::kLong);
  if (per < 0) {
    if (ids.numel() != 0 || per_sample_ >= 0)
      throw DataError("channel state: '" + prefix + "' does not match this AQ-SGD buffer");
    return;  // never used
  }
  if (per_sample_ >= 0 && per_sample_ != per)
    throw DataError("channel state: '" + prefix + "per_sample' is " + std::to_string(per) +
                    ", this buffer holds " + std::to_string(per_sample_));
  ensure(per);
  if (store_ == AqStore::kMemory && capacity > capacity_) grow(capacity);
  if (capacity != capacity_)
    throw DataError("channel state: '" + prefix + "capacity' is " + std::to_string(capacity) +
                    " samples, this buffer holds " + std::to_string(capacity_));
  at::Tensor rows = get_tensor(in, prefix + "rows", at::kHalf, ids.numel() * per);
  std::fill(seen_.begin(), seen_.end(), 0);
  const int64_t* idp = ids.data_ptr<int64_t>();
  const auto* src = reinterpret_cast<const uint16_t*>(rows.data_ptr<at::Half>());
  for (int64_t i = 0; i < ids.numel(); ++i) {
    if (idp[i] < 0 || idp[i] >= capacity_)
      throw DataError("channel state: '" + prefix + "seen_ids' holds " + std::to_string(idp[i]) +
                      ", outside [0, " + std::to_string(capacity_) + ")");
    std::memcpy(row(idp[i]), src + i * per, 2 * static_cast<size_t>(per));
    seen_[static_cast<size_t>(idp[i])] = 1;
  }
}

uint64_t SampleBuffer::bytes() const {
  return map_ ? map_bytes_ : memory_.size() * sizeof(uint16_t);
}

}  // namespace slowpipe::compressors
