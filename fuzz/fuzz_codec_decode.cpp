// Fuzz target: the decoder of every codec, on arbitrary bytes and shapes.
//
// Input layout: byte 0 picks a codec spec from kSpecs (every codec, every
// quantizer granularity, min-max, stochastic, fp32 scales, sparsifiers with and
// without a value codec, PowerSGD, QSGD, TAH-Quant); bytes 1-3 pick a shape of rank 1..3 with at most
// 4096 elements; byte 4 picks a mode; the rest is the message or the tensor.
//   mode 0: the rest decoded as is (mostly wrong lengths: must be DataError);
//   mode 1: the rest cut or zero-padded to the exact message length, then decoded;
//   mode 2: the rest read as fp32 values (zero-padded), encoded, and the message
//           decoded again: the encoder may refuse (DataError: non-finite input),
//           and when it accepts, every decoded value is finite (except `none`,
//           which passes values through).
// Only DataError and UsageError may escape a codec; anything else (a crash, an
// out-of-bounds read under ASan, another exception, a huge allocation) is a bug.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/errors.h"
#include "compressors/codecs/codec.h"

namespace {

const char* const kSpecs[] = {
    "none",
    "fp16",
    "bf16",
    "q1",
    "q2",
    "q3",
    "q4",
    "q5",
    "q6",
    "q7",
    "q8",
    "q1:tensor",
    "q2:row",
    "q3:group=7",
    "q4:group=64",
    "q5:tensor:fp32",
    "q8:row:fp32",
    "q4:channel:fp32",
    "q1:minmax",
    "q2:minmax:row",
    "q4:minmax:tensor",
    "q6:minmax:group=5",
    "q8:minmax:fp32",
    "q3:minmax:tensor:fp32",
    "q2:stochastic",
    "q4:stochastic:group=16",
    "q8:stochastic:minmax:row",
    "q1:stochastic:tensor:fp32",
    "sign",
    "sign:tensor",
    "topk:0.1",
    "topk:0.5:tensor",
    "topk:1",
    "topk:0.01",
    "randk:0.2",
    "randk:0.5:tensor",
    "randk:0.3:unbiased",
    "topk:0.1+q8",
    "topk:0.3+q2:stochastic",
    "topk:0.2+q4:minmax:fp32",
    "topk:0.25+fp16",
    "topk:0.5:tensor+bf16",
    "randk:0.1+q4",
    "randk:0.4:unbiased+q8:tensor",
    "randk:0.5+q3:group=3",
    "powersgd:1",
    "powersgd:2:fp16",
    "powersgd:3:square",
    "powersgd:1:rows",
    "qsgd:s=1",
    "qsgd:s=4:bucket=16",
    "qsgd:s=127:bucket=3",
    "topk:0.2+qsgd:s=2",
    "tah:bits=3",
    "tah:bits=2.5:tile=8",
    "tah:bits=7.5:tile=2:fixed",
    "topk:0.3+tah:bits=3.5:tile=4",
    "colk:0.25",
    "colk:1",
    "colk:0.1+q8",
};
constexpr size_t kNumSpecs = sizeof(kSpecs) / sizeof(kSpecs[0]);

struct Codecs {
  std::vector<std::unique_ptr<slowpipe::compressors::Codec>> all;
  Codecs() {
    for (const char* s : kSpecs) all.push_back(slowpipe::compressors::make_codec(s, 7));
  }
};

[[noreturn]] void fail(const char* spec, const char* what) {
  std::fprintf(stderr, "fuzz_codec_decode: spec %s: %s\n", spec, what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace sc = slowpipe::compressors;
  static Codecs codecs;
  if (size < 5) return 0;
  const size_t which = data[0] % kNumSpecs;
  sc::Codec& codec = *codecs.all[which];
  // Shape: rank 1..3, each dimension 1..64 or 0 (rarely), at most 4096 elements.
  const int rank = 1 + data[1] % 3;
  sc::Shape shape;
  int64_t numel = 1;
  for (int d = 0; d < rank; ++d) {
    int64_t dim = (data[2 + d % 2] >> (d == 2 ? 4 : 0)) % 65;
    if (d == 2) dim = 1 + dim % 16;
    if (numel * std::max<int64_t>(dim, 1) > 4096) dim = 1;
    shape.push_back(dim);
    numel *= dim;
  }
  const int mode = data[4] % 3;
  const uint8_t* rest = data + 5;
  const size_t rest_size = size - 5;
  std::vector<float> out(static_cast<size_t>(numel) + 1);
  try {
    if (mode == 0) {
      codec.decode_raw(rest, rest_size, shape, out.data());
    } else if (mode == 1) {
      std::vector<uint8_t> msg(codec.message_bytes(shape), 0);
      if (!msg.empty() && rest_size > 0)
        std::memcpy(msg.data(), rest, std::min(msg.size(), rest_size));
      codec.decode_raw(msg.data(), msg.size(), shape, out.data());
    } else {
      std::vector<float> x(static_cast<size_t>(numel), 0.0F);
      if (!x.empty() && rest_size > 0)
        std::memcpy(x.data(), rest, std::min(x.size() * sizeof(float), rest_size));
      sc::Message msg;
      codec.encode_raw(x.data(), shape, msg);
      if (msg.size() != codec.message_bytes(shape)) fail(kSpecs[which], "message size");
      codec.decode_raw(msg.data(), msg.size(), shape, out.data());
      if (std::strcmp(kSpecs[which], "none") != 0)
        for (int64_t i = 0; i < numel; ++i)
          if (!std::isfinite(out[i])) fail(kSpecs[which], "finite input decoded to non-finite");
    }
  } catch (const slowpipe::DataError&) {
  } catch (const slowpipe::UsageError&) {
  }
  return 0;
}
