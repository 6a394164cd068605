// Test helpers for what crosses the cuts: a channel that carries fp32 as it is
// and records the shape and bytes of every tensor it sends, and a run of
// training batches drawn as the trainer draws them.
#pragma once

#include <ATen/ATen.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "compressors/channels/channel.h"
#include "models/torch/dataset.h"
#include "models/torch/sampler.h"
#include "sim/engine.h"

namespace slowpipe::test {

using sim::ChannelRole;

struct Sent {
  ChannelRole role;
  int boundary;
  std::vector<int64_t> shape;
  uint64_t bytes;
};

// fp32 as it is, recording the shape of every tensor it carries.
class ShapeChannel : public compressors::Channel {
 public:
  ShapeChannel(std::shared_ptr<std::vector<Sent>> log, ChannelRole role, int boundary)
      : log_(std::move(log)), role_(role), boundary_(boundary) {}
  void send(const at::Tensor& x, const at::Tensor& /*ids*/, compressors::Message& msg,
            compressors::TransferStats* stats) override {
    const at::Tensor c = x.to(at::kCPU, at::kFloat).contiguous();
    const auto* p = reinterpret_cast<const uint8_t*>(c.data_ptr<float>());
    msg.assign(p, p + c.nbytes());
    log_->push_back(
        {role_, boundary_, std::vector<int64_t>(x.sizes().begin(), x.sizes().end()), msg.size()});
    if (stats) stats->bytes += msg.size();
  }
  at::Tensor receive(const compressors::Message& msg, const compressors::Shape& shape,
                     const at::Tensor& /*ids*/, compressors::TransferStats* /*stats*/) override {
    at::Tensor t = at::empty(shape, at::kFloat);
    std::memcpy(t.data_ptr<float>(), msg.data(), msg.size());
    return t;
  }
  at::Tensor infer(const at::Tensor& x, compressors::TransferStats*) override { return x; }
  std::string spec() const override { return "shape-recorder"; }

 private:
  std::shared_ptr<std::vector<Sent>> log_;
  ChannelRole role_;
  int boundary_;
};

inline std::vector<models::Batch> batches(const models::Dataset& data, int n, int64_t batch_size) {
  models::EpochSampler sampler(data.size(models::Split::kTrain), batch_size, 7, true, true);
  std::vector<models::Batch> v;
  v.reserve(n);
  for (int i = 0; i < n; ++i) v.push_back(data.get(models::Split::kTrain, sampler.next().indices));
  return v;
}

}  // namespace slowpipe::test
