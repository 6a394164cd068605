// An uncompressed warm-up in front of any boundary channel (compress.warmup_epochs,
// docs/codec-spec.md "Warm-up"). For the first `epochs` epochs every transfer is
// sent as fp32 (the `none` message: 4 bytes per element, reported as such in
// TransferStats) and the wrapped channel is neither called nor changed: EF's
// residual and EF21's g stay as they were (zero for a fresh run) until the first
// compressed transfer, exactly as if the channel were built at epoch `epochs`.
// From epoch `epochs` on, transfers go to the wrapped channel unchanged.
//
// infer() always applies the wrapped channel's inference path (the inner codec),
// warm-up or not. AQ-SGD channels are not wrapped: they run their own warm-up,
// which also fills their buffers (factory.cpp picks).
#pragma once

#include <memory>
#include <string>

#include "compressors/channels/channel.h"
#include "compressors/codecs/codec.h"

namespace slowpipe::compressors {

class WarmupChannel : public Channel {
 public:
  WarmupChannel(std::unique_ptr<Channel> inner, int epochs);
  void send(const at::Tensor& x, const at::Tensor& sample_ids, Message& msg,
            TransferStats* stats) override;
  at::Tensor receive(const Message& msg, const Shape& shape, const at::Tensor& sample_ids,
                     TransferStats* stats) override;
  at::Tensor infer(const at::Tensor& x, TransferStats* stats) override;
  void set_epoch(int epoch) override;
  uint64_t state_bytes() const override { return inner_->state_bytes(); }
  std::string spec() const override { return inner_->spec(); }
  // prefix + "warmup.epoch", then the wrapped channel's state under the same prefix.
  void save_state(const std::string& prefix, StateDict& out) const override;
  void load_state(const std::string& prefix, const StateDict& in) override;

  bool in_warmup() const { return epoch_ < epochs_; }
  Channel& inner() { return *inner_; }

 private:
  std::unique_ptr<Channel> inner_;
  int epochs_;
  int epoch_ = 0;
  std::unique_ptr<Codec> plain_;  // `none`
};

}  // namespace slowpipe::compressors
