// The uncompressed warm-up wrapper; the rule is in warmup.h.
#include "compressors/channels/internal/warmup.h"

#include <ATen/ATen.h>

#include "compressors/channels/internal/feedback.h"
#include "compressors/channels/state_dict.h"

namespace slowpipe::compressors {

WarmupChannel::WarmupChannel(std::unique_ptr<Channel> inner, int epochs)
    : inner_(std::move(inner)), epochs_(epochs), plain_(make_codec("none")) {}

void WarmupChannel::send(const at::Tensor& x, const at::Tensor& sample_ids, Message& msg,
                         TransferStats* stats) {
  if (!in_warmup()) return inner_->send(x, sample_ids, msg, stats);
  const at::Tensor xc = to_cpu_float(x);
  const auto t0 = StatsClock::now();
  plain_->encode_raw(xc.data_ptr<float>(), shape_of(xc), msg);
  add_sent(stats, msg, t0);  // fp32 is exact: delta_norm stays 0
}

at::Tensor WarmupChannel::receive(const Message& msg, const Shape& shape,
                                  const at::Tensor& sample_ids, TransferStats* stats) {
  if (!in_warmup()) return inner_->receive(msg, shape, sample_ids, stats);
  at::Tensor out = at::empty(at::IntArrayRef(shape), at::TensorOptions().dtype(at::kFloat));
  const auto t0 = StatsClock::now();
  plain_->decode_raw(msg.data(), msg.size(), shape, out.data_ptr<float>());
  add_received(stats, t0);
  return out;
}

at::Tensor WarmupChannel::infer(const at::Tensor& x, TransferStats* stats) {
  return inner_->infer(x, stats);
}

void WarmupChannel::set_epoch(int epoch) {
  epoch_ = epoch;
  inner_->set_epoch(epoch);
}

void WarmupChannel::save_state(const std::string& prefix, StateDict& out) const {
  put_int(out, prefix + "warmup.epoch", epoch_);
  inner_->save_state(prefix, out);
}

void WarmupChannel::load_state(const std::string& prefix, const StateDict& in) {
  epoch_ = static_cast<int>(get_int(in, prefix + "warmup.epoch"));
  inner_->load_state(prefix, in);
}

}  // namespace slowpipe::compressors
