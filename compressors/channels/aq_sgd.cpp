// AQ-SGD channel: the update rule is in aq_sgd.h and docs/codec-spec.md (feedback schemes).
#include "compressors/channels/internal/aq_sgd.h"

#include <ATen/ATen.h>

#include <cmath>

#include "common/errors.h"
#include "compressors/codecs/aq_kernels.h"
#include "compressors/codecs/sparsifier.h"

namespace slowpipe::compressors {

AqChannel::AqChannel(std::unique_ptr<Codec> codec, std::string spec, AqConfig config)
    : CodecChannel(std::move(codec), std::move(spec)),
      config_(std::move(config)),
      sender_(config_.store, config_.sender_path, config_.num_samples),
      receiver_(config_.store, config_.receiver_path, config_.num_samples),
      plain_(make_codec("none")) {}

void AqChannel::refuse_buffer_overflow(const float* a, int64_t n) const {
  int64_t bad = first_non_finite(a, n);
  if (bad >= 0) refuse_non_finite(spec_, a, n, bad);
  throw DataError("'" + spec_ +
                  "': an activation value does not fit the fp16 AQ-SGD buffers (largest 65504; "
                  "the buffers hold m(xi) + D(C(a - m(xi))), see docs/codec-spec.md)");
}

void AqChannel::publish_warmup_mask(Codec& codec, const SampleBuffer& m, MaskStore& store,
                                    const float* a, const int64_t* id, int64_t rows, int64_t per,
                                    const Shape& shape, const at::Tensor& sample_ids) {
  auto* sparse = dynamic_cast<Sparsifier*>(&codec);
  if (!sparse) return;  // make_boundary only attaches masks to sparsifying channels
  std::vector<float> d(static_cast<size_t>(rows * per));
  for (int64_t r = 0; r < rows; ++r)
    aq::delta_row(a + r * per, m.row(id[r]), m.seen(id[r]), per, d.data() + r * per, nullptr);
  sparse->select(d.data(), shape);
  store.publish(sample_ids, *sparse->last_selection());
}

void AqChannel::save_state(const std::string& prefix, StateDict& out) const {
  CodecChannel::save_state(prefix, out);
  put_int(out, prefix + "epoch", epoch_);
  sender_.save_state(prefix + "sender.", out);
  receiver_.save_state(prefix + "receiver.", out);
  if (mask_codec_) {
    CodecState mask_state;
    mask_codec_->save_state(prefix + "mask_codec.", mask_state);
    put_codec_state(out, mask_state);
  }
}

void AqChannel::load_state(const std::string& prefix, const StateDict& in) {
  CodecChannel::load_state(prefix, in);
  epoch_ = static_cast<int>(get_int(in, prefix + "epoch"));
  sender_.load_state(prefix + "sender.", in);
  receiver_.load_state(prefix + "receiver.", in);
  if (mask_codec_)
    mask_codec_->load_state(prefix + "mask_codec.", get_codec_state(in, prefix + "mask_codec."));
}

namespace {
// Sample ids as a CPU int64 tensor of one id per row of a tensor of `shape`.
at::Tensor checked_ids(const std::string& spec, const at::Tensor& sample_ids, const Shape& shape) {
  if (!sample_ids.defined())
    throw UsageError(spec +
                     ": AQ-SGD needs sample ids (it cannot compress data-parallel gradients)");
  at::Tensor ids = sample_ids.to(at::kCPU, at::kLong).contiguous();
  const int64_t rows = shape.empty() ? 1 : shape[0];
  if (ids.numel() != rows)
    throw std::logic_error("aq: " + std::to_string(ids.numel()) + " sample ids for " +
                           std::to_string(rows) + " rows");
  return ids;
}
}  // namespace

void AqChannel::send(const at::Tensor& x, const at::Tensor& sample_ids, Message& msg,
                     TransferStats* stats) {
  const at::Tensor xc = to_cpu_float(x);
  const Shape shape = shape_of(xc);
  const at::Tensor ids = checked_ids(spec_, sample_ids, shape);
  const int64_t rows = ids.numel();
  const int64_t n = xc.numel();
  const int64_t per = rows == 0 ? 0 : n / rows;
  sender_.ensure(per);
  const int64_t* id = ids.data_ptr<int64_t>();
  const float* a = xc.data_ptr<float>();
  const auto t0 = Clock::now();
  double norm_sq = 0;
  bool fits = true;

  if (in_warmup()) {
    // Uncompressed; the sender stores the activation.
    if (up_masks_ && warmup_masks())
      publish_warmup_mask(*codec_, sender_, *up_masks_, a, id, rows, per, shape, sample_ids);
    plain_->encode_raw(a, shape, msg);
    for (int64_t r = 0; r < rows; ++r) {
      fits &= aq::store_row(a + r * per, per, sender_.row(id[r]), &norm_sq);
      sender_.mark_seen(id[r]);
    }
  } else {
    // d = a - m_s; msg = C(d); m_s <- m_s + D(msg).
    delta_.resize(static_cast<size_t>(n));
    for (int64_t r = 0; r < rows; ++r)
      aq::delta_row(a + r * per, sender_.row(id[r]), sender_.seen(id[r]), per,
                    delta_.data() + r * per, &norm_sq);
    codec_->encode_raw(delta_.data(), shape, msg);
    scratch_.resize(static_cast<size_t>(n));
    codec_->decode_raw(msg.data(), msg.size(), shape, scratch_.data());
    for (int64_t r = 0; r < rows; ++r) {
      fits &= aq::accumulate_row(sender_.row(id[r]), sender_.seen(id[r]), scratch_.data() + r * per,
                                 per, nullptr);
      sender_.mark_seen(id[r]);
    }
    publish_sent(sample_ids);
  }
  if (!fits) refuse_buffer_overflow(a, n);
  add_sent(stats, msg, t0, std::sqrt(norm_sq));  // delta_norm: ||a|| in warm-up
}

at::Tensor AqChannel::receive(const Message& msg, const Shape& shape, const at::Tensor& sample_ids,
                              TransferStats* stats) {
  const at::Tensor ids = checked_ids(spec_, sample_ids, shape);
  const int64_t rows = ids.numel();
  const int64_t n = shape_numel(shape);
  const int64_t per = rows == 0 ? 0 : n / rows;
  receiver_.ensure(per);
  const int64_t* id = ids.data_ptr<int64_t>();
  at::Tensor out = at::empty(at::IntArrayRef(shape), at::TensorOptions().dtype(at::kFloat));
  float* o = out.data_ptr<float>();
  const auto t0 = Clock::now();

  if (in_warmup()) {
    // Uncompressed; the receiver stores what arrived (the sender's a, exactly).
    plain_->decode_raw(msg.data(), msg.size(), shape, o);
    if (down_masks_ && warmup_masks())
      publish_warmup_mask(mask_codec_ ? *mask_codec_ : *codec_, receiver_, *down_masks_, o, id,
                          rows, per, shape, sample_ids);
    for (int64_t r = 0; r < rows; ++r) {
      aq::store_row(o + r * per, per, receiver_.row(id[r]), nullptr);
      receiver_.mark_seen(id[r]);
    }
  } else {
    // x = m_r + D(msg); m_r <- x. The sender checked that these values fit.
    codec_->decode_raw(msg.data(), msg.size(), shape, o);
    for (int64_t r = 0; r < rows; ++r) {
      aq::accumulate_row(receiver_.row(id[r]), receiver_.seen(id[r]), o + r * per, per,
                         o + r * per);
      receiver_.mark_seen(id[r]);
    }
    publish_received(msg, shape, sample_ids);
  }
  add_received(stats, t0);
  return out;
}

}  // namespace slowpipe::compressors
