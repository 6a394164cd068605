// Feedback schemes that need no per-sample state: direct (the codec alone), EF
// (error feedback with residual memory) and EF21, plus the backward channel that
// reuses the forward TopK mask. AQ-SGD lives in aq_sgd.h.
//
//   direct: send C(x); the receiver gets x_hat = D(C(x)).
//   EF:     p = x + e; send C(p); x_hat = D(C(p)); e <- p - x_hat   (sender only)
//   EF21:   send C(x - g); both sides: g <- g + D(C(x - g)); x_hat = g
//           (Richtarik et al. 2021; Rudakov et al. use it on activations)
//
// State tensors (e, g) have the shape of the last transfer and restart at zero
// when the shape changes (e.g. a short last batch). One state per channel: all
// micro-batches of a boundary share it, as in Rudakov et al.'s compressors.
// The sender and receiver copies of EF21's g are separate arrays.
// Each scheme implements the two halves of a transfer (Channel::send/receive).
#pragma once

#include <ATen/Tensor.h>

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compressors/channels/channel.h"
#include "compressors/codecs/codec.h"
#include "compressors/codecs/sparsifier.h"

namespace slowpipe::compressors {

// Forward masks waiting for their micro-batch's backward, keyed by the contents
// of the sample-id tensor (several micro-batches may be in flight at once).
class MaskStore {
 public:
  void publish(const at::Tensor& sample_ids, const SparseSelection& selection);
  // Removes and returns the oldest mask published under these ids; throws
  // std::logic_error when there is none.
  SparseSelection take(const at::Tensor& sample_ids);
  size_t pending() const;
  // Pending masks in publication order (normally none between steps).
  void save_state(const std::string& prefix, StateDict& out) const;
  void load_state(const std::string& prefix, const StateDict& in);

 private:
  static constexpr size_t kMaxPending = 4096;  // forwards never followed by a backward
  std::map<std::vector<int64_t>, std::deque<SparseSelection>> masks_;
  std::deque<std::vector<int64_t>> order_;
};

// Shared plumbing: CPU fp32 staging, timing, statistics, mask publication.
//
// Masks for a `topk:shared` backward: a boundary has two MaskStores, one per
// side, as two machines would. The upstream store (the stage that sends
// activations) is filled by the forward send (the mask it chose) and emptied by
// the backward receive; the downstream store is filled by the forward receive
// (the indices read from the message, or in AQ-SGD's warm-up the mask computed
// from the receiver's own copies) and emptied by the backward send.
class CodecChannel : public Channel {
 public:
  CodecChannel(std::unique_ptr<Codec> codec, std::string spec);
  at::Tensor infer(const at::Tensor& x, TransferStats* stats) override;
  std::string spec() const override { return spec_; }
  // The codec's state under prefix + "codec.".
  void save_state(const std::string& prefix, StateDict& out) const override;
  void load_state(const std::string& prefix, const StateDict& in) override;
  // Both channels of a boundary whose backward is `topk:shared`.
  void share_masks(std::shared_ptr<MaskStore> upstream, std::shared_ptr<MaskStore> downstream) {
    up_masks_ = std::move(upstream);
    down_masks_ = std::move(downstream);
  }
  Codec& codec() { return *codec_; }

 protected:
  using Clock = StatsClock;
  // Encodes x (CPU fp32, `shape`) into msg; adds bytes and encode_s.
  void encode_timed(Codec& codec, const float* x, const Shape& shape, Message& msg,
                    TransferStats* stats);
  // Decodes msg into out; adds decode_s.
  void decode_timed(Codec& codec, const Message& msg, const Shape& shape, float* out,
                    TransferStats* stats) const;
  // Forward send: the mask the codec just chose, into the upstream store.
  void publish_sent(const at::Tensor& sample_ids);
  // Forward receive: the mask read from msg, into the downstream store.
  void publish_received(const Message& msg, const Shape& shape, const at::Tensor& sample_ids);

  std::unique_ptr<Codec> codec_;
  std::string spec_;
  std::shared_ptr<MaskStore> up_masks_, down_masks_;
  std::vector<float> scratch_;  // the sender's own decode (EF, EF21, AQ-SGD)
};

class DirectChannel : public CodecChannel {
 public:
  using CodecChannel::CodecChannel;
  void send(const at::Tensor& x, const at::Tensor& sample_ids, Message& msg,
            TransferStats* stats) override;
  at::Tensor receive(const Message& msg, const Shape& shape, const at::Tensor& sample_ids,
                     TransferStats* stats) override;
};

class EfChannel : public CodecChannel {
 public:
  using CodecChannel::CodecChannel;
  void send(const at::Tensor& x, const at::Tensor& sample_ids, Message& msg,
            TransferStats* stats) override;
  at::Tensor receive(const Message& msg, const Shape& shape, const at::Tensor& sample_ids,
                     TransferStats* stats) override;
  uint64_t state_bytes() const override { return 4 * error_.size(); }
  const std::vector<float>& error() const { return error_; }  // e, sender side
  void save_state(const std::string& prefix, StateDict& out) const override;
  void load_state(const std::string& prefix, const StateDict& in) override;

 private:
  bool active_ = false;  // a first transfer fixed shape_
  Shape shape_;
  std::vector<float> error_;
};

class Ef21Channel : public CodecChannel {
 public:
  using CodecChannel::CodecChannel;
  void send(const at::Tensor& x, const at::Tensor& sample_ids, Message& msg,
            TransferStats* stats) override;
  at::Tensor receive(const Message& msg, const Shape& shape, const at::Tensor& sample_ids,
                     TransferStats* stats) override;
  uint64_t state_bytes() const override { return 4 * (sender_.size() + receiver_.size()); }
  const std::vector<float>& sender_state() const { return sender_; }
  const std::vector<float>& receiver_state() const { return receiver_; }
  void save_state(const std::string& prefix, StateDict& out) const override;
  void load_state(const std::string& prefix, const StateDict& in) override;

 private:
  // Each side's g starts at zero, and again when the shape changes.
  static void activate(const Shape& shape, bool& active, Shape& current, std::vector<float>& g);
  bool sender_active_ = false, receiver_active_ = false;
  Shape sender_shape_, receiver_shape_;
  std::vector<float> sender_, receiver_;
};

// Backward channel applying the forward mask of the same micro-batch
// (`topk:shared`, optionally `+q8` etc.). Sends values only: the sender takes
// the mask from the downstream store, the receiver from the upstream one.
class SharedMaskChannel : public CodecChannel {
 public:
  using CodecChannel::CodecChannel;
  void send(const at::Tensor& x, const at::Tensor& sample_ids, Message& msg,
            TransferStats* stats) override;
  at::Tensor receive(const Message& msg, const Shape& shape, const at::Tensor& sample_ids,
                     TransferStats* stats) override;
  // Evaluation has no backward pass: passes x through, charging fp32 bytes.
  at::Tensor infer(const at::Tensor& x, TransferStats* stats) override;
  // Also saves the boundary's two MaskStores (shared with the forward channel).
  void save_state(const std::string& prefix, StateDict& out) const override;
  void load_state(const std::string& prefix, const StateDict& in) override;

 private:
  Sparsifier& sparsifier();
};

// Contiguous CPU fp32 view of any tensor (no copy when it already is one), and
// the result moved back to the input's device and dtype.
at::Tensor to_cpu_float(const at::Tensor& x);
at::Tensor like_input(const at::Tensor& result, const at::Tensor& input);
Shape shape_of(const at::Tensor& x);
// ||x - x_hat|| / ||x|| over n values (0 when ||x|| = 0).
double relative_error(const float* x, const float* x_hat, int64_t n);
// Sets stats->rel_error of x (CPU fp32) against what came out (same shape);
// null stats: nothing.
void set_rel_error(TransferStats* stats, const at::Tensor& x, const at::Tensor& x_hat);

}  // namespace slowpipe::compressors
