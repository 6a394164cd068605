// none / fp16 / bf16 / sign codecs; see cast_codecs.h for their payloads.
#include "compressors/codecs/internal/cast_codecs.h"

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <type_traits>
#include <cstring>

#include "common/errors.h"
#include "compressors/codecs/quant_kernels.h"

namespace slowpipe::compressors {

namespace {

void reject_args(const SpecStage& stage, const CodecBuildContext& ctx) {
  if (!stage.args.empty())
    stage_error(ctx, stage.args.front().pos,
                "'" + stage.name + "' takes no options, got '" + stage.args.front().value + "'");
}

class Fp32Codec : public Codec {
 public:
  uint64_t payload_bytes(const Shape& shape) const override {
    return 4 * static_cast<uint64_t>(shape_numel(shape));
  }
  // No memcpy for an empty tensor: its buffers may be null (undefined behaviour).
  void encode_payload(const float* x, const Shape& shape, uint8_t* out) override {
    if (uint64_t bytes = payload_bytes(shape)) std::memcpy(out, x, bytes);
  }
  void decode_payload(const uint8_t* p, const Shape& shape, float* out) const override {
    if (uint64_t bytes = payload_bytes(shape)) std::memcpy(out, p, bytes);
  }
  std::string spec() const override { return "none"; }
};

// Shared by fp16 and bf16: 16-bit storage through c10's conversions.
template <class T>
class Cast16Codec : public Codec {
 public:
  explicit Cast16Codec(std::string name) : name_(std::move(name)) {}
  uint64_t payload_bytes(const Shape& shape) const override {
    return 2 * static_cast<uint64_t>(shape_numel(shape));
  }
  // Refuses NaN and inf, and finite values that round to inf in 16 bits (above
  // 65519 for fp16): a silent inf would be a non-finite value crossing.
  void encode_payload(const float* x, const Shape& shape, uint8_t* out) override {
    int64_t n = shape_numel(shape);
    uint16_t all_exponent = 0;  // any result with an all-ones exponent: inf or NaN
    for (int64_t i = 0; i < n; ++i) {
      T h(x[i]);
      std::memcpy(out + 2 * i, &h.x, 2);
      all_exponent |= static_cast<uint16_t>((h.x & kExponent) == kExponent);
    }
    if (all_exponent) {
      int64_t i = first_non_finite(x, n);
      if (i >= 0) refuse_non_finite(name_, x, n, i);
      for (i = 0; i < n; ++i)
        if ((T(x[i]).x & kExponent) == kExponent) break;
      throw DataError(fmt::format(
          "cannot encode with '{}': the value {} at index {} overflows {} (largest finite {}); "
          "use a wider codec or q<b> scales",
          name_, x[i], i, name_, static_cast<float>(T(std::numeric_limits<T>::max()))));
    }
  }
  void decode_payload(const uint8_t* p, const Shape& shape, float* out) const override {
    int64_t n = shape_numel(shape);
    for (int64_t i = 0; i < n; ++i) {
      T h;
      std::memcpy(&h.x, p + 2 * i, 2);
      out[i] = static_cast<float>(h);
    }
  }
  std::string spec() const override { return name_; }

 private:
  static constexpr uint16_t kExponent = std::is_same_v<T, c10::Half> ? 0x7C00 : 0x7F80;
  std::string name_;
};

class SignCodec : public Codec {
 public:
  explicit SignCodec(bool per_row) : per_row_(per_row) {}
  uint64_t payload_bytes(const Shape& shape) const override {
    int64_t n = shape_numel(shape);
    return n == 0 ? 0 : 4 * static_cast<uint64_t>(groups(shape)) + packed_bytes(n, 1);
  }
  void encode_payload(const float* x, const Shape& shape, uint8_t* out) override {
    int64_t n = shape_numel(shape);
    if (n == 0) return;
    int64_t s = groups(shape), run = n / s;
    for (int64_t g = 0; g < s; ++g) {
      double sum = 0;  // a NaN or inf makes it non-finite; finite sums cannot overflow
      for (int64_t i = g * run; i < (g + 1) * run; ++i) sum += std::fabs(x[i]);
      auto scale = static_cast<float>(sum / static_cast<double>(run));
      if (!std::isfinite(scale)) refuse_non_finite(spec(), x, n);
      std::memcpy(out + 4 * g, &scale, 4);
    }
    std::vector<uint8_t> codes(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) codes[i] = x[i] >= 0.0F ? 1 : 0;
    pack_codes(codes.data(), n, 1, out + 4 * s);
  }
  void decode_payload(const uint8_t* p, const Shape& shape, float* out) const override {
    int64_t n = shape_numel(shape);
    if (n == 0) return;
    int64_t s = groups(shape), run = n / s;
    std::vector<uint8_t> codes(static_cast<size_t>(n));
    unpack_codes(p + 4 * s, n, 1, codes.data());
    for (int64_t g = 0; g < s; ++g) {
      float scale;
      std::memcpy(&scale, p + 4 * g, 4);
      if (!std::isfinite(scale) || scale < 0)
        throw DataError("sign message: bad scale in group " + std::to_string(g));
      for (int64_t i = g * run; i < (g + 1) * run; ++i) out[i] = codes[i] ? scale : -scale;
    }
  }
  std::string spec() const override { return per_row_ ? "sign" : "sign:tensor"; }

 private:
  int64_t groups(const Shape& shape) const { return per_row_ ? shape_rows(shape) : 1; }
  bool per_row_;
};

}  // namespace

std::unique_ptr<Codec> make_fp32_codec(const SpecStage& stage, const CodecBuildContext& ctx) {
  reject_args(stage, ctx);
  return std::make_unique<Fp32Codec>();
}
std::unique_ptr<Codec> make_fp16_codec(const SpecStage& stage, const CodecBuildContext& ctx) {
  reject_args(stage, ctx);
  return std::make_unique<Cast16Codec<c10::Half>>("fp16");
}
std::unique_ptr<Codec> make_bf16_codec(const SpecStage& stage, const CodecBuildContext& ctx) {
  reject_args(stage, ctx);
  return std::make_unique<Cast16Codec<c10::BFloat16>>("bf16");
}
std::unique_ptr<Codec> make_sign_codec(const SpecStage& stage, const CodecBuildContext& ctx) {
  bool per_row = true;
  StageOptions options(ctx);
  for (const SpecArg& arg : stage.args) {
    if (arg.key.empty() && arg.value == "row") {
      options.claim("scale scope", arg);
      per_row = true;
    } else if (arg.key.empty() && arg.value == "tensor") {
      options.claim("scale scope", arg);
      per_row = false;
    } else {
      stage_error(ctx, arg.pos,
                  "expected 'row' or 'tensor' after 'sign:', got '" + arg.value + "'");
    }
  }
  return std::make_unique<SignCodec>(per_row);
}

}  // namespace slowpipe::compressors
