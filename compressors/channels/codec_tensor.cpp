// The at::Tensor side of Codec (codec.h): encode() and decode(). Kept out of
// codec.cpp so that the codecs themselves (slowpipe::codecs) link no libtorch;
// this file is part of slowpipe::compressors.
#include <ATen/ATen.h>

#include "compressors/codecs/codec.h"

namespace slowpipe::compressors {

Message Codec::encode(const at::Tensor& x) {
  at::Tensor c = x.to(at::kCPU, at::kFloat).contiguous();
  Shape shape(c.sizes().begin(), c.sizes().end());
  Message out;
  encode_raw(c.data_ptr<float>(), shape, out);
  return out;
}

at::Tensor Codec::decode(const Message& msg, const Shape& shape) const {
  at::Tensor out = at::empty(shape, at::TensorOptions().dtype(at::kFloat));
  decode_raw(msg.data(), msg.size(), shape, out.data_ptr<float>());
  return out;
}

}  // namespace slowpipe::compressors
