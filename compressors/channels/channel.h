// A channel carries one kind of tensor across one pipeline boundary in one
// direction (activations forward, activation-gradients backward, or a stage's
// parameter gradients between data-parallel replicas). It wraps a stateless codec
// in a feedback scheme (direct, EF, EF21, AQ-SGD) and keeps the sender's and the
// receiver's state apart, as two machines would.
//
// Tensors are [B, ...]: dimension 0 indexes samples (one sample id each).
#pragma once

#include <ATen/Tensor.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "compressors/codecs/codec.h"
#include "compressors/channels/state_dict.h"

namespace slowpipe::compressors {

// What one transfer cost and how faithful it was.
struct TransferStats {
  uint64_t bytes = 0;     // exact bytes on the wire (all messages of this transfer)
  double rel_error = 0;   // ||x - x_hat|| / ||x||  (0 when ||x|| = 0)
  double delta_norm = 0;  // AQ-SGD: ||a - m(xi)|| of what was compressed; else 0
  double encode_s = 0;    // sender-side seconds
  double decode_s = 0;    // receiver-side seconds
};

// The one place channels fill TransferStats; `stats` may be null (nothing is
// recorded). A sender pass that began at t0 and wrote `msg` adds its bytes and
// seconds (and sets delta_norm, where the scheme measures one); a receiver
// pass adds its seconds.
using StatsClock = std::chrono::steady_clock;
inline double seconds_since(StatsClock::time_point t0) {
  return std::chrono::duration<double>(StatsClock::now() - t0).count();
}
inline void add_sent(TransferStats* stats, const Message& msg, StatsClock::time_point t0) {
  if (!stats) return;
  stats->bytes += msg.size();
  stats->encode_s += seconds_since(t0);
}
inline void add_sent(TransferStats* stats, const Message& msg, StatsClock::time_point t0,
                     double delta_norm) {
  add_sent(stats, msg, t0);
  if (stats) stats->delta_norm = delta_norm;
}
inline void add_received(TransferStats* stats, StatsClock::time_point t0) {
  if (stats) stats->decode_s += seconds_since(t0);
}

class Channel {
 public:
  virtual ~Channel() = default;
  // Sends x across in one process: send() then receive() on this channel, and
  // rel_error from x and what came out. Returns what the receiver reconstructs
  // (same shape, dtype, device as x). `sample_ids` is int64 [B] (needed by
  // AQ-SGD and topk:shared; may be undefined for channels that do not key state
  // by sample). `stats` may be null.
  at::Tensor transfer(const at::Tensor& x, const at::Tensor& sample_ids, TransferStats* stats);

  // The two halves of a transfer, for a sender and a receiver that live in
  // different processes (distributed/): each process builds the same channel and calls
  // only its half, so the sender's state (EF residual, EF21's and AQ-SGD's
  // sender copies, forward masks kept for the backward) stays in the sending
  // process and the receiver's state in the receiving one.
  //   send:    x (any device or dtype) -> `msg`, the exact wire bytes; updates
  //            the sender state. Adds bytes, encode_s and delta_norm to stats.
  //   receive: `msg` for a tensor of `shape` -> x_hat as a CPU fp32 tensor;
  //            updates the receiver state. Adds decode_s to stats.
  // receive(send(x)) on two channels built alike is bit for bit transfer(x) on
  // one (tests/compressors/test_split_channel.cpp).
  virtual void send(const at::Tensor& x, const at::Tensor& sample_ids, Message& msg,
                    TransferStats* stats) = 0;
  virtual at::Tensor receive(const Message& msg, const Shape& shape, const at::Tensor& sample_ids,
                             TransferStats* stats) = 0;
  // Compress and decompress for evaluation ("compressed inference"): the inner
  // codec applied to x directly (EF: no residual added; EF21: no g; AQ-SGD: a,
  // not a - m(xi); warm-up: the codec, not fp32), and no state used or changed
  // (feedback state, and the codec's random streams are restored afterwards).
  virtual at::Tensor infer(const at::Tensor& x, TransferStats* stats) = 0;
  // The epoch about to run (warm-up epochs send uncompressed: WarmupChannel, AQ-SGD).
  virtual void set_epoch(int /*epoch*/) {}
  // Bytes of feedback state held (sender + receiver copies).
  virtual uint64_t state_bytes() const { return 0; }
  // The spec string this channel was built from, canonical form.
  virtual std::string spec() const = 0;

  // Checkpoints (bitwise resume): save_state puts everything that shapes this
  // channel's future transfers into `out` under names starting with `prefix`
  // (EF residuals, EF21 copies, AQ-SGD buffers and seen flags, the epoch, codec
  // counters and generators, pending TopK masks); load_state restores it into a
  // channel built from the same spec and context, after which it transfers bit
  // for bit like the saved one. load_state throws DataError for a missing key
  // or a dtype/shape mismatch. Stateless channels save nothing.
  virtual void save_state(const std::string& /*prefix*/, StateDict& /*out*/) const {}
  virtual void load_state(const std::string& /*prefix*/, const StateDict& /*in*/) {}

 private:
  Message wire_;  // transfer()'s message between its two halves
};

}  // namespace slowpipe::compressors
