// Direct, EF, EF21 and shared-mask channels; the update rules are in feedback.h.
#include "compressors/channels/internal/feedback.h"

#include <ATen/ATen.h>

#include <cmath>
#include <stdexcept>

#include "common/errors.h"

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

void MaskStore::save_state(const std::string& prefix, StateDict& out) const {
  // order_ lists keys in publication order; the i-th occurrence of a key is the
  // i-th mask of its queue, so replaying order_ rebuilds the same store.
  put_int(out, prefix + "count", static_cast<int64_t>(order_.size()));
  std::map<std::vector<int64_t>, size_t> used;
  for (size_t j = 0; j < order_.size(); ++j) {
    const std::vector<int64_t>& key = order_[j];
    const SparseSelection& sel = masks_.at(key).at(used[key]++);
    const std::string p = prefix + std::to_string(j) + ".";
    at::Tensor ids = at::empty({static_cast<int64_t>(key.size())}, at::kLong);
    std::copy(key.begin(), key.end(), ids.data_ptr<int64_t>());
    out[p + "ids"] = ids;
    at::Tensor geom = at::empty({3}, at::kLong);
    geom.data_ptr<int64_t>()[0] = sel.rows;
    geom.data_ptr<int64_t>()[1] = sel.k;
    geom.data_ptr<int64_t>()[2] = sel.row_len;
    out[p + "geometry"] = geom;
    at::Tensor idx = at::empty({static_cast<int64_t>(sel.indices.size())}, at::kInt);
    std::copy(sel.indices.begin(), sel.indices.end(), idx.data_ptr<int32_t>());
    out[p + "indices"] = idx;
  }
}

void MaskStore::load_state(const std::string& prefix, const StateDict& in) {
  masks_.clear();
  order_.clear();
  const int64_t count = get_int(in, prefix + "count");
  if (count < 0) throw DataError("channel state: '" + prefix + "count' is negative");
  for (int64_t j = 0; j < count; ++j) {
    const std::string p = prefix + std::to_string(j) + ".";
    at::Tensor ids = get_tensor(in, p + "ids", at::kLong);
    at::Tensor geom = get_tensor(in, p + "geometry", at::kLong, 3);
    SparseSelection sel;
    sel.rows = geom.data_ptr<int64_t>()[0];
    sel.k = geom.data_ptr<int64_t>()[1];
    sel.row_len = geom.data_ptr<int64_t>()[2];
    if (sel.rows < 0 || sel.k < 0 || sel.k > sel.row_len)
      throw DataError("channel state: '" + p + "geometry' is not a mask geometry");
    at::Tensor idx = get_tensor(in, p + "indices", at::kInt, sel.rows * sel.k);
    const int32_t* ip = idx.data_ptr<int32_t>();
    for (int64_t i = 0; i < idx.numel(); ++i)
      if (ip[i] < 0 || ip[i] >= sel.row_len)
        throw DataError("channel state: '" + p + "indices' holds an index out of range");
    sel.indices.assign(ip, ip + idx.numel());
    std::vector<int64_t> key(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + ids.numel());
    masks_[key].push_back(std::move(sel));
    order_.push_back(std::move(key));
  }
}

// ---- CodecChannel ----

double relative_error(const float* x, const float* x_hat, int64_t n) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(x[i]) - x_hat[i];
    num += d * d;
    den += static_cast<double>(x[i]) * x[i];
  }
  return den > 0 ? std::sqrt(num / den) : 0.0;
}

void set_rel_error(TransferStats* stats, const at::Tensor& x, const at::Tensor& x_hat) {
  if (stats)
    stats->rel_error = relative_error(x.data_ptr<float>(), x_hat.data_ptr<float>(), x.numel());
}

CodecChannel::CodecChannel(std::unique_ptr<Codec> codec, std::string spec)
    : codec_(std::move(codec)), spec_(std::move(spec)) {}

void CodecChannel::save_state(const std::string& prefix, StateDict& out) const {
  CodecState codec_state;
  codec_->save_state(prefix + "codec.", codec_state);
  put_codec_state(out, codec_state);
  CodecArrays arrays;
  codec_->save_arrays(prefix + "codec_f32.", arrays);
  put_codec_arrays(out, arrays);
}
void CodecChannel::load_state(const std::string& prefix, const StateDict& in) {
  codec_->load_state(prefix + "codec.", get_codec_state(in, prefix + "codec."));
  codec_->load_arrays(prefix + "codec_f32.", get_codec_arrays(in, prefix + "codec_f32."));
}

void CodecChannel::encode_timed(Codec& codec, const float* x, const Shape& shape, Message& msg,
                                TransferStats* stats) {
  const auto t0 = Clock::now();
  codec.encode_raw(x, shape, msg);
  add_sent(stats, msg, t0);
}

void CodecChannel::decode_timed(Codec& codec, const Message& msg, const Shape& shape, float* out,
                                TransferStats* stats) const {
  const auto t0 = Clock::now();
  codec.decode_raw(msg.data(), msg.size(), shape, out);
  add_received(stats, t0);
}

void CodecChannel::publish_sent(const at::Tensor& sample_ids) {
  if (!up_masks_) return;
  if (const SparseSelection* sel = codec_->last_selection()) up_masks_->publish(sample_ids, *sel);
}

void CodecChannel::publish_received(const Message& msg, const Shape& shape,
                                    const at::Tensor& sample_ids) {
  if (!down_masks_) return;
  if (const auto* sparse = dynamic_cast<const Sparsifier*>(codec_.get()))
    down_masks_->publish(sample_ids, sparse->selection_of(msg.data(), msg.size(), shape));
}

at::Tensor CodecChannel::infer(const at::Tensor& x, TransferStats* stats) {
  at::Tensor xc = to_cpu_float(x);
  at::Tensor out = at::empty_like(xc);
  // The codec's own state (the stochastic-rounding counter, RandK's generator)
  // is put back afterwards: evaluating never shifts the training transfers'
  // random streams, so a run with or without evaluations trains alike.
  CodecState codec_state;
  codec_->save_state("", codec_state);
  CodecArrays codec_arrays;  // PowerSGD's warm-start factor
  codec_->save_arrays("", codec_arrays);
  Message msg;
  const Shape shape = shape_of(xc);
  encode_timed(*codec_, xc.data_ptr<float>(), shape, msg, stats);
  decode_timed(*codec_, msg, shape, out.data_ptr<float>(), stats);
  codec_->load_state("", codec_state);
  codec_->load_arrays("", codec_arrays);
  set_rel_error(stats, xc, out);
  return like_input(out, x);
}

namespace {
at::Tensor cpu_float_of(const Shape& shape) {
  return at::empty(at::IntArrayRef(shape), at::TensorOptions().dtype(at::kFloat));
}
}  // namespace

// ---- direct ----

void DirectChannel::send(const at::Tensor& x, const at::Tensor& sample_ids, Message& msg,
                         TransferStats* stats) {
  const at::Tensor xc = to_cpu_float(x);
  encode_timed(*codec_, xc.data_ptr<float>(), shape_of(xc), msg, stats);
  publish_sent(sample_ids);
}

at::Tensor DirectChannel::receive(const Message& msg, const Shape& shape,
                                  const at::Tensor& sample_ids, TransferStats* stats) {
  at::Tensor out = cpu_float_of(shape);
  decode_timed(*codec_, msg, shape, out.data_ptr<float>(), stats);
  publish_received(msg, shape, sample_ids);
  return out;
}

// ---- EF ----

void EfChannel::send(const at::Tensor& x, const at::Tensor& sample_ids, Message& msg,
                     TransferStats* stats) {
  const at::Tensor xc = to_cpu_float(x);
  const Shape shape = shape_of(xc);
  const int64_t n = xc.numel();
  if (!active_ || shape != shape_) {
    active_ = true;
    shape_ = shape;
    error_.assign(static_cast<size_t>(n), 0.0F);
  }
  const auto t0 = Clock::now();
  const float* xp = xc.data_ptr<float>();
  std::vector<float> p(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) p[i] = xp[i] + error_[i];  // p = x + e
  codec_->encode_raw(p.data(), shape, msg);
  scratch_.resize(static_cast<size_t>(n));
  codec_->decode_raw(msg.data(), msg.size(), shape, scratch_.data());  // x_hat = D(C(p))
  for (int64_t i = 0; i < n; ++i) error_[i] = p[i] - scratch_[i];      // e <- p - x_hat
  add_sent(stats, msg, t0);
  publish_sent(sample_ids);
}

at::Tensor EfChannel::receive(const Message& msg, const Shape& shape, const at::Tensor& sample_ids,
                              TransferStats* stats) {
  at::Tensor out = cpu_float_of(shape);
  decode_timed(*codec_, msg, shape, out.data_ptr<float>(), stats);
  publish_received(msg, shape, sample_ids);
  return out;
}

namespace {
// The shape of a feedback state tensor: "active" (0/1) and, when active, "shape".
void save_shape(const std::string& prefix, bool active, const Shape& shape, StateDict& out) {
  put_int(out, prefix + "active", active ? 1 : 0);
  if (!active) return;
  at::Tensor t = at::empty({static_cast<int64_t>(shape.size())}, at::kLong);
  std::copy(shape.begin(), shape.end(), t.data_ptr<int64_t>());
  out[prefix + "shape"] = t;
}
bool load_shape(const std::string& prefix, const StateDict& in, Shape& shape) {
  if (get_int(in, prefix + "active") == 0) return false;
  at::Tensor t = get_tensor(in, prefix + "shape", at::kLong);
  shape.assign(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel());
  for (int64_t d : shape)
    if (d < 0) throw DataError("channel state: '" + prefix + "shape' has a negative dimension");
  return true;
}
}  // namespace

void EfChannel::save_state(const std::string& prefix, StateDict& out) const {
  CodecChannel::save_state(prefix, out);
  save_shape(prefix, active_, shape_, out);
  if (active_) put_floats(out, prefix + "error", error_);
}

void EfChannel::load_state(const std::string& prefix, const StateDict& in) {
  CodecChannel::load_state(prefix, in);
  Shape shape;
  active_ = load_shape(prefix, in, shape);
  shape_ = active_ ? shape : Shape{};
  error_ = active_ ? get_floats(in, prefix + "error", shape_numel(shape_)) : std::vector<float>{};
}

// ---- EF21 ----

void Ef21Channel::activate(const Shape& shape, bool& active, Shape& current,
                           std::vector<float>& g) {
  if (active && shape == current) return;
  active = true;
  current = shape;
  g.assign(static_cast<size_t>(shape_numel(shape)), 0.0F);
}

void Ef21Channel::send(const at::Tensor& x, const at::Tensor& sample_ids, Message& msg,
                       TransferStats* stats) {
  const at::Tensor xc = to_cpu_float(x);
  const Shape shape = shape_of(xc);
  const int64_t n = xc.numel();
  activate(shape, sender_active_, sender_shape_, sender_);
  const float* xp = xc.data_ptr<float>();
  std::vector<float> d(static_cast<size_t>(n));
  double delta_sq = 0;
  for (int64_t i = 0; i < n; ++i) {
    d[i] = xp[i] - sender_[i];  // x - g (sender)
    delta_sq += static_cast<double>(d[i]) * d[i];
  }
  // Encode, and decode its own message to update the sender's copy of g.
  const auto t0 = Clock::now();
  codec_->encode_raw(d.data(), shape, msg);
  scratch_.resize(static_cast<size_t>(n));
  codec_->decode_raw(msg.data(), msg.size(), shape, scratch_.data());
  for (int64_t i = 0; i < n; ++i) sender_[i] += scratch_[i];
  add_sent(stats, msg, t0, std::sqrt(delta_sq));
  publish_sent(sample_ids);
}

at::Tensor Ef21Channel::receive(const Message& msg, const Shape& shape,
                                const at::Tensor& sample_ids, TransferStats* stats) {
  // Decode on its own, update the receiver's g, output g.
  activate(shape, receiver_active_, receiver_shape_, receiver_);
  const auto t0 = Clock::now();
  at::Tensor out = cpu_float_of(shape);
  float* o = out.data_ptr<float>();
  codec_->decode_raw(msg.data(), msg.size(), shape, o);
  for (size_t i = 0; i < receiver_.size(); ++i) {
    receiver_[i] += o[i];
    o[i] = receiver_[i];
  }
  add_received(stats, t0);
  publish_received(msg, shape, sample_ids);
  return out;
}

void Ef21Channel::save_state(const std::string& prefix, StateDict& out) const {
  CodecChannel::save_state(prefix, out);
  save_shape(prefix, sender_active_, sender_shape_, out);
  if (sender_active_) put_floats(out, prefix + "sender", sender_);
  save_shape(prefix + "receiver.", receiver_active_, receiver_shape_, out);
  if (receiver_active_) put_floats(out, prefix + "receiver", receiver_);
}

void Ef21Channel::load_state(const std::string& prefix, const StateDict& in) {
  CodecChannel::load_state(prefix, in);
  Shape shape;
  sender_active_ = load_shape(prefix, in, shape);
  sender_shape_ = sender_active_ ? shape : Shape{};
  sender_ = sender_active_ ? get_floats(in, prefix + "sender", shape_numel(sender_shape_))
                           : std::vector<float>{};
  receiver_active_ = load_shape(prefix + "receiver.", in, shape);
  receiver_shape_ = receiver_active_ ? shape : Shape{};
  receiver_ = receiver_active_ ? get_floats(in, prefix + "receiver", shape_numel(receiver_shape_))
                               : std::vector<float>{};
}

// ---- shared mask ----

Sparsifier& SharedMaskChannel::sparsifier() {
  auto* sparse = dynamic_cast<Sparsifier*>(codec_.get());
  if (!sparse || !up_masks_ || !down_masks_)
    throw std::logic_error("SharedMaskChannel without a shared sparsifier");
  return *sparse;
}

void SharedMaskChannel::send(const at::Tensor& x, const at::Tensor& sample_ids, Message& msg,
                             TransferStats* stats) {
  Sparsifier& sparse = sparsifier();
  sparse.use_selection(down_masks_->take(sample_ids));
  const at::Tensor xc = to_cpu_float(x);
  encode_timed(sparse, xc.data_ptr<float>(), shape_of(xc), msg, stats);
}

at::Tensor SharedMaskChannel::receive(const Message& msg, const Shape& shape,
                                      const at::Tensor& sample_ids, TransferStats* stats) {
  Sparsifier& sparse = sparsifier();
  sparse.use_selection(up_masks_->take(sample_ids));
  at::Tensor out = cpu_float_of(shape);
  decode_timed(sparse, msg, shape, out.data_ptr<float>(), stats);
  return out;
}

void SharedMaskChannel::save_state(const std::string& prefix, StateDict& out) const {
  CodecChannel::save_state(prefix, out);
  up_masks_->save_state(prefix + "masks.", out);
  down_masks_->save_state(prefix + "masks_down.", out);
}

void SharedMaskChannel::load_state(const std::string& prefix, const StateDict& in) {
  CodecChannel::load_state(prefix, in);
  up_masks_->load_state(prefix + "masks.", in);
  down_masks_->load_state(prefix + "masks_down.", in);
}

at::Tensor SharedMaskChannel::infer(const at::Tensor& x, TransferStats* stats) {
  if (stats) stats->bytes += 4 * static_cast<uint64_t>(x.numel());
  return x;
}

}  // namespace slowpipe::compressors
