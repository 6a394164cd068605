// Direct, EF, EF21 and shared-mask channels; the update rules are in feedback.h.
#include "compressors/feedback.h"

#include <ATen/ATen.h>

#include <cmath>
#include <stdexcept>

namespace slowpipe::compressors {

namespace {
std::vector<int64_t> ids_key(const at::Tensor& sample_ids) {
  if (!sample_ids.defined()) return {};
  at::Tensor ids = sample_ids.to(at::kCPU, at::kLong).contiguous();
  const int64_t* p = ids.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + ids.numel());
}
}  // namespace

at::Tensor to_cpu_float(const at::Tensor& x) {
  return x.to(at::kCPU, at::kFloat).contiguous();
}
at::Tensor like_input(const at::Tensor& result, const at::Tensor& input) {
  return result.to(input.device(), input.scalar_type());
}
Shape shape_of(const at::Tensor& x) {
  return Shape(x.sizes().begin(), x.sizes().end());
}

// ---- MaskStore ----

void MaskStore::publish(const at::Tensor& sample_ids, const SparseSelection& selection) {
  std::vector<int64_t> key = ids_key(sample_ids);
  masks_[key].push_back(selection);
  order_.push_back(std::move(key));
  while (order_.size() > kMaxPending) {  // drop the oldest orphan
    auto it = masks_.find(order_.front());
    if (it != masks_.end() && !it->second.empty()) {
      it->second.pop_front();
      if (it->second.empty()) masks_.erase(it);
    }
    order_.pop_front();
  }
}

SparseSelection MaskStore::take(const at::Tensor& sample_ids) {
  std::vector<int64_t> key = ids_key(sample_ids);
  auto it = masks_.find(key);
  if (it == masks_.end() || it->second.empty())
    throw std::logic_error(
        "topk:shared: no forward mask for this micro-batch's sample ids (was its forward sent "
        "through a topk/randk channel of the same boundary?)");
  SparseSelection s = std::move(it->second.front());
  it->second.pop_front();
  if (it->second.empty()) masks_.erase(it);
  for (auto o = order_.begin(); o != order_.end(); ++o)
    if (*o == key) {
      order_.erase(o);
      break;
    }
  return s;
}

size_t MaskStore::pending() const {
  size_t n = 0;
  for (const auto& [key, q] : masks_) n += q.size();
  return n;
}

// ---- CodecChannel ----

CodecChannel::CodecChannel(std::unique_ptr<Codec> codec, std::string spec)
    : codec_(std::move(codec)), spec_(std::move(spec)) {}

double CodecChannel::seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

void CodecChannel::round_trip(const float* x, const Shape& shape, float* out,
                              TransferStats* stats) {
  auto t0 = Clock::now();
  codec_->encode_raw(x, shape, message_);
  double enc = seconds_since(t0);
  t0 = Clock::now();
  codec_->decode_raw(message_.data(), message_.size(), shape, out);
  double dec = seconds_since(t0);
  if (stats) {
    stats->bytes += message_.size();
    stats->encode_s += enc;
    stats->decode_s += dec;
  }
}

void CodecChannel::finish_stats(const float* x, const float* x_hat, int64_t n,
                                TransferStats* stats) {
  if (!stats) return;
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; ++i) {
    double d = static_cast<double>(x[i]) - x_hat[i];
    num += d * d;
    den += static_cast<double>(x[i]) * x[i];
  }
  stats->rel_error = den > 0 ? std::sqrt(num / den) : 0.0;
}

void CodecChannel::publish(const at::Tensor& sample_ids) {
  if (!masks_) return;
  const SparseSelection* sel = codec_->last_selection();
  if (sel) masks_->publish(sample_ids, *sel);
}

at::Tensor CodecChannel::infer(const at::Tensor& x, TransferStats* stats) {
  at::Tensor xc = to_cpu_float(x);
  at::Tensor out = at::empty_like(xc);
  round_trip(xc.data_ptr<float>(), shape_of(xc), out.data_ptr<float>(), stats);
  finish_stats(xc.data_ptr<float>(), out.data_ptr<float>(), xc.numel(), stats);
  return like_input(out, x);
}

// ---- direct ----

at::Tensor DirectChannel::transfer(const at::Tensor& x, const at::Tensor& sample_ids,
                                   TransferStats* stats) {
  at::Tensor xc = to_cpu_float(x);
  at::Tensor out = at::empty_like(xc);
  round_trip(xc.data_ptr<float>(), shape_of(xc), out.data_ptr<float>(), stats);
  finish_stats(xc.data_ptr<float>(), out.data_ptr<float>(), xc.numel(), stats);
  publish(sample_ids);
  return like_input(out, x);
}

// ---- EF ----

at::Tensor EfChannel::transfer(const at::Tensor& x, const at::Tensor& sample_ids,
                               TransferStats* stats) {
  at::Tensor xc = to_cpu_float(x);
  Shape shape = shape_of(xc);
  const int64_t n = xc.numel();
  if (shape != shape_) {
    shape_ = shape;
    error_.assign(static_cast<size_t>(n), 0.0F);
  }
  const float* xp = xc.data_ptr<float>();
  std::vector<float> p(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) p[i] = xp[i] + error_[i];  // p = x + e
  at::Tensor out = at::empty_like(xc);
  float* o = out.data_ptr<float>();
  round_trip(p.data(), shape, o, stats);                    // x_hat = D(C(p))
  for (int64_t i = 0; i < n; ++i) error_[i] = p[i] - o[i];  // e <- p - x_hat
  finish_stats(xp, o, n, stats);
  publish(sample_ids);
  return like_input(out, x);
}

// ---- EF21 ----

at::Tensor Ef21Channel::transfer(const at::Tensor& x, const at::Tensor& sample_ids,
                                 TransferStats* stats) {
  at::Tensor xc = to_cpu_float(x);
  Shape shape = shape_of(xc);
  const int64_t n = xc.numel();
  if (shape != shape_) {
    shape_ = shape;
    sender_.assign(static_cast<size_t>(n), 0.0F);
    receiver_.assign(static_cast<size_t>(n), 0.0F);
  }
  const float* xp = xc.data_ptr<float>();
  std::vector<float> d(static_cast<size_t>(n)), dq(static_cast<size_t>(n));
  double delta_sq = 0;
  for (int64_t i = 0; i < n; ++i) {
    d[i] = xp[i] - sender_[i];  // x - g (sender)
    delta_sq += static_cast<double>(d[i]) * d[i];
  }
  // Sender: encode, and decode its own message to update its copy of g.
  auto t0 = Clock::now();
  codec_->encode_raw(d.data(), shape, message_);
  codec_->decode_raw(message_.data(), message_.size(), shape, dq.data());
  for (int64_t i = 0; i < n; ++i) sender_[i] += dq[i];
  double enc = seconds_since(t0);
  // Receiver: decode the message on its own, update its g, output g.
  t0 = Clock::now();
  codec_->decode_raw(message_.data(), message_.size(), shape, dq.data());
  for (int64_t i = 0; i < n; ++i) receiver_[i] += dq[i];
  at::Tensor out = at::empty_like(xc);
  std::copy(receiver_.begin(), receiver_.end(), out.data_ptr<float>());
  double dec = seconds_since(t0);
  if (stats) {
    stats->bytes += message_.size();
    stats->encode_s += enc;
    stats->decode_s += dec;
    stats->delta_norm = std::sqrt(delta_sq);
  }
  finish_stats(xp, out.data_ptr<float>(), n, stats);
  publish(sample_ids);
  return like_input(out, x);
}

// ---- shared mask ----

SharedMaskChannel::SharedMaskChannel(std::unique_ptr<Codec> codec, std::string spec,
                                     std::shared_ptr<MaskStore> store)
    : CodecChannel(std::move(codec), std::move(spec)) {
  masks_ = std::move(store);
}

at::Tensor SharedMaskChannel::transfer(const at::Tensor& x, const at::Tensor& sample_ids,
                                       TransferStats* stats) {
  auto* sparse = dynamic_cast<Sparsifier*>(codec_.get());
  if (!sparse || !masks_) throw std::logic_error("SharedMaskChannel without a shared sparsifier");
  sparse->use_selection(masks_->take(sample_ids));
  at::Tensor xc = to_cpu_float(x);
  at::Tensor out = at::empty_like(xc);
  round_trip(xc.data_ptr<float>(), shape_of(xc), out.data_ptr<float>(), stats);
  finish_stats(xc.data_ptr<float>(), out.data_ptr<float>(), xc.numel(), stats);
  return like_input(out, x);
}

at::Tensor SharedMaskChannel::infer(const at::Tensor& x, TransferStats* stats) {
  if (stats) stats->bytes += 4 * static_cast<uint64_t>(x.numel());
  return x;
}

}  // namespace slowpipe::compressors
