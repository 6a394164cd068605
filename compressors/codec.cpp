// Codec base (raw encode and decode, the size check) and the codec registry.
// The tensor conversions are in codec_tensor.cpp (libtorch).
#include "compressors/codec.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstring>

#include "common/errors.h"
#include "compressors/cast_codecs.h"
#include "compressors/powersgd.h"
#include "compressors/qsgd.h"
#include "compressors/quant_kernels.h"
#include "compressors/quantizer.h"
#include "compressors/sparsifier.h"

namespace slowpipe::compressors {

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw UsageError("negative dimension in shape");
    n *= d;
  }
  return n;
}

int64_t shape_rows(const Shape& shape) {
  return shape.size() < 2 ? 1 : shape[0];
}

void Codec::encode_raw(const float* x, const Shape& shape, Message& out) {
  // No zero-fill: every codec writes each payload byte (test_wire.cpp encodes
  // into a buffer full of other bytes to check), so a reused message costs nothing.
  out.resize(payload_bytes(shape));
  encode_payload(x, shape, out.data());
}

void Codec::decode_raw(const uint8_t* data, size_t size, const Shape& shape, float* out) const {
  const uint64_t expected = message_bytes(shape);
  if (size != expected)
    throw DataError("message for '" + spec() + "': " + std::to_string(size) + " bytes, expected " +
                    std::to_string(expected));
  decode_payload(data, shape, out);
}

int64_t first_non_finite(const float* x, int64_t n) {
  return first_non_finite_index(x, n);
}

void refuse_non_finite(const std::string& spec, const float* x, int64_t n, int64_t index) {
  if (index < 0) index = first_non_finite(x, n);
  std::string value = index < 0 ? "non-finite" : fmt::format("{}", x[index]);
  throw DataError("cannot encode with '" + spec + "': the tensor holds a non-finite value (" +
                  value + ") at index " + std::to_string(index) +
                  " (codecs other than 'none' refuse NaN and inf)");
}

void stage_error(const CodecBuildContext& ctx, size_t pos, const std::string& what) {
  spec_error(ctx.text ? *ctx.text : std::string(), pos, what);
}

void StageOptions::claim(const std::string& family, const SpecArg& arg) {
  auto word = [](const SpecArg& a) { return a.key.empty() ? a.value : a.key + "=" + a.value; };
  for (const auto& [f, prev] : claimed_) {
    if (f != family) continue;
    if (word(*prev) == word(arg))
      stage_error(ctx_, arg.pos,
                  "'" + word(arg) + "' is given twice (also at position " +
                      std::to_string(prev->pos) + ")");
    stage_error(ctx_, arg.pos,
                "'" + word(arg) + "' conflicts with '" + word(*prev) + "' at position " +
                    std::to_string(prev->pos) + " (both set the " + family + ")");
  }
  claimed_.emplace_back(family, &arg);
}

const Registry<CodecInfo>& codec_registry() {
  // "q<digit>..." is the entry "q", listed as "q1..q8".
  const auto key_of = [](const std::string& name) {
    const bool q =
        name.size() >= 2 && name[0] == 'q' && std::isdigit(static_cast<unsigned char>(name[1]));
    return q ? std::string("q") : name;
  };
  const auto label_of = [](const CodecInfo& c) {
    return c.name == "q" ? std::string("q1..q8") : c.name;
  };
  static const Registry<CodecInfo> registry(
      "codec",
      {
          {"none", "none", "fp32 as is, 4 bytes per element (a true pass-through)", make_fp32_codec,
           /*value_codec=*/true},
          {"fp16", "fp16", "IEEE half precision, 2 bytes per element", make_fp16_codec,
           /*value_codec=*/true},
          {"bf16", "bf16", "bfloat16 (8-bit exponent), 2 bytes per element", make_bf16_codec,
           /*value_codec=*/true},
          {"q", "q<1..8>[:stochastic][:tensor|row|channel|group=G][:minmax][:fp32]",
           "uniform quantization, bit-packed; default max-abs, fp16 scale per channel, nearest",
           make_quantizer, /*value_codec=*/true},
          {"sign", "sign[:row|tensor]", "1 bit per element plus an fp32 scale (mean |x|) per row",
           make_sign_codec},
          {"topk", "topk:K[:row|tensor] | topk:shared ; then optional +VALUES",
           "keep the K-fraction largest magnitudes per row; shared = reuse the forward mask",
           make_topk, /*value_codec=*/false, make_sparsifier},
          {"randk", "randk:K[:row|tensor][:unbiased] ; then optional +VALUES",
           "keep a uniformly random K-fraction per row", make_randk, /*value_codec=*/false,
           make_sparsifier},
          {"powersgd", "powersgd:R[:last|rows|square][:fp16]",
           "PowerSGD rank R, warm-started (use ef(...) as published): (rows + cols) * R values",
           make_powersgd},
          {"qsgd", "qsgd:s=S[:bucket=D]",
           "QSGD: per bucket of D (128) an fp32 L2 norm, per element sign + stochastic level 0..S",
           make_qsgd, /*value_codec=*/true},
      },
      key_of, label_of);
  return registry;
}

namespace {

// The labels of the codecs `pick` selects, joined by `sep`.
std::string codec_labels(bool (*pick)(const CodecInfo&), const std::string& sep) {
  std::string s;
  for (const CodecInfo& c : codec_registry())
    if (pick(c)) s += (s.empty() ? "" : sep) + codec_registry().label(c);
  return s;
}

const CodecInfo& codec_of(const SpecStage& stage, const CodecBuildContext& ctx) {
  const CodecInfo* info = codec_registry().find(stage.name);
  if (!info)
    stage_error(
        ctx, stage.pos,
        "expected a codec name (" + codec_registry().known() + "), got '" + stage.name + "'");
  return *info;
}

}  // namespace

std::unique_ptr<Codec> make_codec(const SpecTree& tree, uint64_t seed) {
  CodecBuildContext ctx;
  ctx.text = &tree.text;
  ctx.seed = seed;
  const SpecStage& first = tree.stages.front();
  const CodecInfo& sparsifier = codec_of(first, ctx);  // reports an unknown name first
  if (tree.stages.size() == 1) return sparsifier.factory(first, ctx);
  if (!sparsifier.with_values)
    stage_error(ctx, tree.plus_pos,
                "'+' may only follow " +
                    codec_labels([](const CodecInfo& c) { return bool(c.with_values); }, " or ") +
                    " (it encodes their kept values)");
  const SpecStage& second = tree.stages[1];
  const CodecInfo* value = codec_registry().find(second.name);
  if (value && !value->value_codec)
    stage_error(ctx, second.pos,
                "expected a value codec after '+' (" +
                    codec_labels([](const CodecInfo& c) { return c.value_codec; }, ", ") +
                    "), got '" + second.name + "'");
  sparsifier.with_values(first, ctx, nullptr);  // report the first stage's errors first
  CodecBuildContext value_ctx = ctx;
  value_ctx.value_stage = true;
  value_ctx.seed = seed ^ 0xA5A5A5A5ULL;
  std::unique_ptr<Codec> values = codec_of(second, value_ctx).factory(second, value_ctx);
  return sparsifier.with_values(first, ctx, std::move(values));
}

std::unique_ptr<Codec> make_codec(const std::string& spec, uint64_t seed) {
  SpecTree tree = parse_spec(spec);
  if (tree.scheme_pos != 0)
    spec_error(spec, tree.scheme_pos,
               "expected a codec here, not a feedback scheme ('" + tree.scheme + "(')");
  return make_codec(tree, seed);
}

}  // namespace slowpipe::compressors
