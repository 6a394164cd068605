// Codec base (raw encode and decode, the size check) and the codec registry.
// The tensor conversions are in codec_tensor.cpp (libtorch).
#include "compressors/codecs/codec.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "common/errors.h"
#include "compressors/codecs/internal/cast_codecs.h"
#include "compressors/codecs/internal/colk.h"
#include "compressors/codecs/internal/powersgd.h"
#include "compressors/codecs/internal/qsgd.h"
#include "compressors/codecs/quant_kernels.h"
#include "compressors/codecs/quantizer.h"
#include "compressors/codecs/sparsifier.h"
#include "compressors/codecs/internal/tah_quant.h"

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

namespace {

// "q<digit>..." is the entry "q", listed as "q1..q8".
std::string codec_key(const std::string& name) {
  const bool q =
      name.size() >= 2 && name[0] == 'q' && std::isdigit(static_cast<unsigned char>(name[1]));
  return q ? std::string("q") : name;
}

// A fixed number of bits per element, whatever the options.
PlotFactsFn fixed_bits(double bits) {
  return [bits](const SpecStage&) {
    CodecPlotFacts f;
    f.bits = bits;
    return f;
  };
}

// q<b>: b bits per element (scales left out, as the plots' axis reads).
CodecPlotFacts quantizer_facts(const SpecStage& stage) {
  CodecPlotFacts f;
  const std::string digits = stage.name.substr(1);
  if (!digits.empty() && digits.find_first_not_of("0123456789") == std::string::npos)
    f.bits = std::stod(digits);
  return f;
}

// topk:K, randk:K: the kept fraction K (topk:shared: none).
CodecPlotFacts sparsifier_facts(const SpecStage& stage) {
  CodecPlotFacts f;
  if (stage.args.empty() || !stage.args.front().key.empty()) return f;
  const std::string& v = stage.args.front().value;
  char* end = nullptr;
  const double k = std::strtod(v.c_str(), &end);
  if (!v.empty() && end && *end == '\0') f.keep_fraction = k;
  return f;
}

bool topk_shared(const SpecStage& stage) {
  return !stage.args.empty() && stage.args.front().key.empty() &&
         stage.args.front().value == "shared";
}

// Examples on the listing's line `line` (SpecExample).
std::vector<SpecExample> examples(std::initializer_list<const char*> specs, int line = 0) {
  std::vector<SpecExample> out;
  for (const char* s : specs) out.push_back({s, "", "", line});
  return out;
}

// colk (internal/colk.h): whole channels kept, their values through +VALUES;
// refused for data-parallel gradients. Its examples fill the listing's line 4.
CodecInfo colk_entry() {
  CodecInfo colk{"colk",
                 "colk:F ; then optional +VALUES",
                 "keep the F-fraction of channels of largest l2 norm over the tokens, indices "
                 "once; slowpipe's reading of Beyond Top-K (Pluralis, ICLR 2025 MCDC workshop; "
                 "its method section is not public)",
                 make_colk,
                 /*value_codec=*/false,
                 make_colk_with_values};
  colk.gradient_form = &colk_gradient_form;
  colk.plot_facts = &colk_plot_facts;
  colk.examples = examples({"colk:0.25", "colk:0.1+q8"}, 4);
  return colk;
}

void register_builtins() {
  const auto add = [](CodecInfo info, PlotFactsFn facts, std::vector<SpecExample> examples) {
    info.plot_facts = std::move(facts);
    info.examples = std::move(examples);
    register_codec(std::move(info));
  };
  CodecInfo none{"none", "none", "fp32 as is, 4 bytes per element (a true pass-through)",
                 make_fp32_codec, /*value_codec=*/true};
  none.reference = true;
  add(none, fixed_bits(32), examples({"none"}));
  add({"fp16", "fp16", "IEEE half precision, 2 bytes per element", make_fp16_codec,
       /*value_codec=*/true},
      fixed_bits(16), examples({"fp16"}));
  add({"bf16", "bf16", "bfloat16 (8-bit exponent), 2 bytes per element", make_bf16_codec,
       /*value_codec=*/true},
      fixed_bits(16), {});
  CodecInfo q{"q", "q<1..8>[:stochastic][:tensor|row|channel|group=G][:minmax][:fp32]",
              "uniform quantization, bit-packed; default max-abs, fp16 scale per channel, nearest",
              make_quantizer, /*value_codec=*/true};
  q.gradient_form = &quantizer_gradient_form;
  add(q, &quantizer_facts, examples({"q4", "q2:stochastic", "q4:group=64"}));
  add({"sign", "sign[:row|tensor]", "1 bit per element plus an fp32 scale (mean |x|) per row",
       make_sign_codec},
      fixed_bits(1), {});
  CodecInfo topk{"topk",
                 "topk:K[:row|tensor] | topk:shared ; then optional +VALUES",
                 "keep the K-fraction largest magnitudes per row; shared = reuse the forward mask",
                 make_topk,
                 /*value_codec=*/false,
                 make_topk_with_values};
  topk.reuses_forward_mask = &topk_shared;
  std::vector<SpecExample> topk_examples = examples({"topk:0.1", "topk:0.1+q8"});
  topk_examples.push_back({"topk:shared", "", /*only_as=*/"backward", /*line=*/1});
  add(topk, &sparsifier_facts, topk_examples);
  add({"randk", "randk:K[:row|tensor][:unbiased] ; then optional +VALUES",
       "keep a uniformly random K-fraction per row", make_randk, /*value_codec=*/false,
       make_randk_with_values},
      &sparsifier_facts, examples({"randk:0.2"}));
  CodecInfo powersgd{
      "powersgd", "powersgd:R[:last|rows|square][:fp16]",
      "PowerSGD rank R, warm-started (use ef(...) as published): (rows + cols) * R values",
      make_powersgd};
  powersgd.gradient_form = &powersgd_gradient_form;
  add(powersgd, nullptr, {{"ef(powersgd:4)", "PowerSGD as published", "", /*line=*/2}});
  add({"qsgd", "qsgd:s=S[:bucket=D]",
       "QSGD: per bucket of D (128) an fp32 L2 norm, per element sign + stochastic level 0..S",
       make_qsgd, /*value_codec=*/true},
      nullptr, examples({"qsgd:s=4", "qsgd:s=15:bucket=512"}, 2));
  add({"tah", "tah:bits=B[:tile=G][:fixed]",
       "TAH-Quant: G-channel tiles, pivot + Hadamard on outlier tiles, entropy-chosen widths",
       make_tah_quant, /*value_codec=*/true},
      &tah_plot_facts,
      examples({"tah:bits=3", "tah:bits=3.5:tile=32", "tah:bits=3.5:fixed", "aq(tah:bits=2)"}, 3));
  register_codec(colk_entry());
}

Registry<CodecInfo>& filled() {
  static LazyRegistry<CodecInfo> codecs(
      "codec", &register_builtins, &codec_key,
      [](const CodecInfo& c) { return c.name == "q" ? std::string("q1..q8") : c.name; });
  return codecs.get();
}

}  // namespace

const Registry<CodecInfo>& codec_registry() {
  return filled();
}

void register_codec(CodecInfo info) {
  if (info.reference)
    for (const CodecInfo& c : filled())
      if (c.reference)
        throw std::logic_error("codec " + info.name + " registered as a second reference (" +
                               c.name + " is one)");
  filled().add(std::move(info));
}

const CodecInfo& reference_codec() {
  for (const CodecInfo& c : filled())
    if (c.reference) return c;
  throw std::logic_error("no reference codec registered");
}

CodecPlotFacts plot_facts(const SpecStage& stage) {
  const CodecInfo* info = codec_registry().find(stage.name);
  return info && info->plot_facts ? info->plot_facts(stage) : CodecPlotFacts{};
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
