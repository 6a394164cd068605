// compress.grad defaults (GradientSpec, channel_spec.h): a q<b> codec with no scale
// granularity gets group=128 scales on the flat [1, N] gradient, making q4
// about 8x smaller than fp32 (per-channel scales there were one scale per
// element: 1.6x). Exact sizes, the error bound with grouped scales, and the
// payload against the naive reference on flat gradient shapes; the resolved
// form, derived from the parse tree, against the same text parsed anew.
#include <ATen/ATen.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/errors.h"
#include "common/options.h"
#include "compressors/codecs/config.h"
#include "compressors/channels/factory.h"
#include "compressors/codecs/quantizer.h"
#include "naive_reference.h"
#include "tests/common/parsed_spec.h"

namespace sc = slowpipe::compressors;
using slowpipe::test::parsed;

namespace {
// compress.grad = `text` as gradients run.
sc::ChannelSpec resolved(const std::string& text) {
  return sc::GradientSpec::parse(text).resolved();
}
std::string resolved_text(const std::string& text) {
  return resolved(text).text();
}
}  // namespace

TEST_CASE("GradientSpec: q<b> without a granularity gets group=128, the rest as written") {
  REQUIRE(resolved_text("q4") == "q4:group=128");
  REQUIRE(resolved_text("q2:stochastic") == "q2:stochastic:group=128");
  REQUIRE(resolved_text("ef(q4)") == "ef(q4:group=128)");
  REQUIRE(resolved_text("ef21(q8:minmax:fp32)") == "ef21(q8:group=128:minmax:fp32)");
  REQUIRE(resolved_text("direct(q4:sr)") == "q4:stochastic:group=128");
  for (const std::string same : {"q4:channel", "q4:row", "q4:tensor", "q4:group=64", "none", "fp16",
                                 "sign", "topk:0.01", "topk:0.01+q4", "ef(topk:0.01+q8)"}) {
    INFO(same);
    REQUIRE(resolved_text(same) == same);
  }
  // A fixed point, and a bad spec is still a usage error.
  REQUIRE(sc::GradientSpec(resolved("ef(q4)")).resolved().text() == "ef(q4:group=128)");
  REQUIRE_THROWS_AS(sc::GradientSpec::parse("q9"), slowpipe::UsageError);
  // topk:shared is only a backward spec, whichever way it was parsed.
  REQUIRE_THROWS_AS(sc::GradientSpec(parsed("topk:shared")), slowpipe::UsageError);
}

TEST_CASE("GradientSpec: q4 on a realistic flat gradient is >= 7x smaller than fp32") {
  // GPT-2 small: one transformer layer is 7,087,872 parameters; a stage of 3 of
  // them, and an odd size with a partial last group.
  for (int64_t n : {int64_t{7087872}, int64_t{3} * 7087872, int64_t{870913}}) {
    INFO("N = " << n);
    const sc::Shape flat = {1, n};
    const double fp32 = 4.0 * static_cast<double>(n);
    const double grouped = static_cast<double>(sc::wire_bytes(resolved("q4"), flat));
    REQUIRE(fp32 / grouped >= 7.0);
    REQUIRE(fp32 / grouped < 8.0);
    REQUIRE(grouped == 2.0 * std::ceil(n / 128.0) + std::ceil(n / 2.0));
    // The control: per-channel scales on this shape are one fp16 scale per element.
    REQUIRE(fp32 / static_cast<double>(sc::wire_bytes(parsed("q4"), flat)) == Approx(1.6));
    REQUIRE(fp32 / static_cast<double>(sc::wire_bytes(resolved("q2"), flat)) >= 14.0);
  }
}

TEST_CASE("GradientSpec: a grouped channel's message is exact and within half a step") {
  const int64_t n = 100003;  // 781 full groups and one of 35
  std::mt19937 rng(5);
  std::student_t_distribution<float> heavy(3.0F);  // gradients have heavy tails
  at::Tensor g = at::empty({1, n});
  float* gp = g.data_ptr<float>();
  for (int64_t i = 0; i < n; ++i) gp[i] = 1e-3F * heavy(rng);
  auto ch = sc::make_channel(resolved("ef(q4)"), sc::ChannelContext{});
  sc::TransferStats st;
  at::Tensor out = ch->transfer(g, at::Tensor(), &st);
  REQUIRE(st.bytes == sc::wire_bytes(parsed("q4:group=128"), {1, n}));
  // Bound per group: |x - x_hat| <= step / 2, step = 2 s / (L - 1), s the fp16
  // scale (max |x| of the group rounded up), L = 15 for 4 bits.
  auto codec = sc::make_codec("q4:group=128");
  sc::Message msg = codec->encode(g);
  const int64_t groups = (n + 127) / 128;
  const float* op = out.data_ptr<float>();
  for (int64_t k = 0; k < groups; ++k) {
    uint16_t h;
    std::memcpy(&h, msg.data() + 2 * k, 2);
    const float s = sc::half_to_float(h);
    float maxabs = 0;
    for (int64_t i = 128 * k; i < std::min(n, 128 * (k + 1)); ++i)
      maxabs = std::max(maxabs, std::fabs(gp[i]));
    REQUIRE(s >= maxabs);
    const float step = 2.0F * s / 14.0F;
    for (int64_t i = 128 * k; i < std::min(n, 128 * (k + 1)); ++i)
      REQUIRE(std::fabs(op[i] - gp[i]) <= 0.5F * step * 1.0001F);
  }
  // Grouped scales follow the tails: far smaller error than one tensor-wide scale.
  auto tensor = sc::make_codec("q4:tensor");
  const double err_group = (out - g).norm().item<double>();
  const double err_tensor = (tensor->decode(tensor->encode(g), {1, n}) - g).norm().item<double>();
  REQUIRE(err_group < 0.5 * err_tensor);
}

TEST_CASE("GradientSpec: grouped payload equals the naive reference on flat gradients") {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0F, 1.0F);
  for (int64_t n :
       {int64_t{127}, int64_t{128}, int64_t{129}, int64_t{3 * 128 + 37}, int64_t{50000}}) {
    std::vector<float> x(static_cast<size_t>(n));
    for (float& v : x) v = normal(rng) * (rng() % 7 == 0 ? 30.0F : 0.01F);
    const std::vector<int64_t> shape = {1, n};
    for (int bits : {2, 4, 8})
      for (bool minmax : {false, true}) {
        const std::string spec =
            resolved("q" + std::to_string(bits) + (minmax ? ":minmax" : "")).text();
        INFO(spec << " N = " << n);
        sc::QuantizerConfig c;
        c.bits = bits;
        c.mode = sc::ScaleMode::kGroup;
        c.group = sc::kGradientGroup;
        c.minmax = minmax;
        auto codec = sc::make_codec(spec);
        sc::Message msg;
        codec->encode_raw(x.data(), shape, msg);
        REQUIRE(msg == sc::naive::quantize_payload(x, shape, c));
        REQUIRE(msg.size() == sc::wire_bytes(parsed(spec), shape));
        std::vector<float> y(static_cast<size_t>(n));
        codec->decode_raw(msg.data(), msg.size(), shape, y.data());
        REQUIRE(y == sc::naive::dequantize_payload(msg, shape, c));
      }
  }
}

TEST_CASE("GradientSpec: the form derived from the tree equals its text parsed anew") {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0F, 1.0F);
  std::vector<float> x(4 * 300);
  for (float& v : x) v = normal(rng);
  for (const std::string text :
       {"q4", "ef(q2:stochastic)", "ef21(q8:minmax:fp32)", "direct(q4:sr)", "powersgd:2",
        "ef(powersgd:1:fp16)", "q4:channel", "topk:0.1+q4"}) {
    INFO(text);
    const sc::GradientSpec grad = sc::GradientSpec::parse(text);
    CHECK(grad.given().text() == text);
    const sc::ChannelSpec& derived = grad.resolved();
    const sc::ChannelSpec again = sc::ChannelSpec::parse(derived.text(), /*backward=*/false);
    CHECK(sc::canonical_spec(derived) == sc::canonical_spec(again));
    CHECK(derived.scheme() == again.scheme());
    for (const sc::Shape& shape : {sc::Shape{1, 1200}, sc::Shape{1, 129}, sc::Shape{4, 300}}) {
      CHECK(sc::wire_bytes(derived, shape) == sc::wire_bytes(again, shape));
      // The same codec: the same bytes for the same tensor.
      sc::Message a, b;
      sc::make_codec(derived.tree(), 7)->encode_raw(x.data(), shape, a);
      sc::make_codec(again.tree(), 7)->encode_raw(x.data(), shape, b);
      CHECK(a == b);
    }
  }
}

TEST_CASE("GradientSpec: compress.grad resolved once, as given and as run") {
  sc::CompressConfig config;
  slowpipe::OptionSet options;
  sc::describe_options(config, options);
  CHECK(config.grad.given().text() == "none");
  CHECK(config.grad.resolved().text() == "none");
  options.set("compress.grad", "ef(q4)");
  CHECK(options.get("compress.grad") == "ef(q4)");  // the option prints the text as given
  CHECK(config.grad.given().text() == "ef(q4)");
  CHECK(config.grad.resolved().text() == "ef(q4:group=128)");
  // Set again: resolved again, from the new spec.
  options.set("compress.grad", "powersgd:4");
  CHECK(config.grad.resolved().text() == "powersgd:4:square");
  options.set("compress.grad", "q4:channel");
  CHECK(config.grad.resolved().text() == "q4:channel");
  CHECK_THROWS_AS(options.set("compress.grad", "topk:shared"), slowpipe::UsageError);
}
