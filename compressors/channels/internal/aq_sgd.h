// AQ-SGD (Wang et al., "Fine-tuning language models over slow networks using
// activation compression with guarantees", NeurIPS 2022): compress the change of
// each sample's activation since that sample was last sent.
//
// Per sample id xi, the sender and the receiver each keep m(xi) (fp16):
//   sender:   d = a - m_s(xi); msg = C(d); m_s(xi) <- m_s(xi) + D(msg)
//   receiver: x = m_r(xi) + D(msg); output x; m_r(xi) <- x
// Both sides compute fp16(m + D(msg)) from the same values, so the two copies
// stay bit-identical. During the first `warmup_epochs` epochs activations are
// sent uncompressed (the `none` message) and stored into m; a sample first seen
// after warm-up starts from m = 0. The inner codec is any codec (q2, topk:0.3).
// One message per transfer covers the whole micro-batch.
//
// With a `topk:shared` backward (aq(topk:K) forward), warm-up transfers publish
// the mask of TopK(a - m(xi)), the indices the steady state would send: the
// backward stays sparse, at its steady-state size, from the first step (from
// epoch `silent_mask_epochs` on: before that the backward sends fp32 too).
// Values that do not fit the fp16 buffers (non-finite, beyond 65504) are a
// DataError.
//
// The per-element loops (fp16 conversions, delta, buffer update) are in
// aq_kernels.h: AVX-512 and AVX2 + F16C paths checked bit for bit against the
// portable loops.
//
// Stats: delta_norm = ||a - m_s|| (the compressed difference; ||a|| in warm-up).
// infer() applies the inner codec to a directly and changes no state.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compressors/channels/internal/feedback.h"
#include "compressors/channels/internal/sample_buffer.h"

namespace slowpipe::compressors {

struct AqConfig {
  int warmup_epochs = 1;
  // Warm-up epochs in which the topk:shared backward itself sends fp32
  // (compress.warmup_epochs): no warm-up mask is published then.
  int silent_mask_epochs = 0;
  int64_t num_samples = 0;  // 0: unknown (memory store grows)
  AqStore store = AqStore::kMemory;
  std::string sender_path, receiver_path;  // disk store files
};

class AqChannel : public CodecChannel {
 public:
  AqChannel(std::unique_ptr<Codec> codec, std::string spec, AqConfig config);
  void send(const at::Tensor& x, const at::Tensor& sample_ids, Message& msg,
            TransferStats* stats) override;
  at::Tensor receive(const Message& msg, const Shape& shape, const at::Tensor& sample_ids,
                     TransferStats* stats) override;
  // The receiver's copy of the codec, for the warm-up masks of a `topk:shared`
  // backward (RandK draws them from its generator: each side keeps its own).
  void set_receiver_mask_codec(std::unique_ptr<Codec> codec) { mask_codec_ = std::move(codec); }
  void set_epoch(int epoch) override { epoch_ = epoch; }
  uint64_t state_bytes() const override { return sender_.bytes() + receiver_.bytes(); }
  // The epoch, both buffers (prefix + "sender." / "receiver."), the codec and
  // the receiver's mask codec (prefix + "mask_codec.").
  void save_state(const std::string& prefix, StateDict& out) const override;
  void load_state(const std::string& prefix, const StateDict& in) override;

  const SampleBuffer& sender_buffer() const { return sender_; }
  const SampleBuffer& receiver_buffer() const { return receiver_; }
  bool in_warmup() const { return epoch_ < config_.warmup_epochs; }

 private:
  // Warm-up with a `topk:shared` backward: publishes into `store` the mask of
  // the delta the steady state would send, a - m(xi), chosen by `codec` from
  // one side's buffer `m` (both sides hold a and m: no bytes).
  void publish_warmup_mask(Codec& codec, const SampleBuffer& m, MaskStore& store, const float* a,
                           const int64_t* id, int64_t rows, int64_t per, const Shape& shape,
                           const at::Tensor& sample_ids);
  bool warmup_masks() const { return epoch_ >= config_.silent_mask_epochs; }
  [[noreturn]] void refuse_buffer_overflow(const float* a, int64_t n) const;

  AqConfig config_;
  int epoch_ = 0;
  SampleBuffer sender_, receiver_;
  std::unique_ptr<Codec> plain_;  // the `none` codec for warm-up messages
  std::unique_ptr<Codec> mask_codec_;
  std::vector<float> delta_;  // the sender's a - m_s, [rows * per], reused across sends
};

}  // namespace slowpipe::compressors
