// fp16 per-sample rows in a std::vector or a MAP_SHARED file mapping.
#include "compressors/sample_buffer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/errors.h"

namespace slowpipe::compressors {

SampleBuffer::SampleBuffer(std::string store, std::string path, int64_t num_samples)
    : store_(std::move(store)), path_(std::move(path)), num_samples_(num_samples) {
  if (store_ != "memory" && store_ != "disk")
    throw UsageError("compress.aq_store: expected 'memory' or 'disk', got '" + store_ + "'");
  if (store_ == "disk" && num_samples_ <= 0)
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
  if (store_ == "disk") {
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

uint64_t SampleBuffer::bytes() const {
  return map_ ? map_bytes_ : memory_.size() * sizeof(uint16_t);
}

}  // namespace slowpipe::compressors
