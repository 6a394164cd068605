// The non-finite policy of docs/codec-spec.md: every codec but `none` refuses a
// tensor holding NaN or +-inf with a DataError naming the spec, the value and
// its index, wherever the value sits in its scale group (first, middle, last:
// the tests put it at every position); `none` passes it through. Finite inputs
// never decode to non-finite values (fp32 scales near FLT_MAX, fp16 overflow).
#include <ATen/ATen.h>

#include <catch2/catch.hpp>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "common/errors.h"
#include "compressors/codecs/codec.h"
#include "compressors/channels/factory.h"
#include "compressors/codecs/quant_kernels.h"
#include "tests/common/parsed_spec.h"

namespace sc = slowpipe::compressors;
using slowpipe::test::parsed;

namespace {

const std::vector<std::string> kRefusing = {
    // max-abs, every granularity, nearest and stochastic, fp16 and fp32 scales
    "q4", "q4:row", "q4:tensor", "q4:group=7", "q1", "q8:row", "q2:group=3", "q4:fp32",
    "q3:row:fp32", "q4:tensor:fp32", "q5:group=7:fp32", "q2:stochastic", "q4:stochastic:row",
    "q8:stochastic:tensor:fp32", "q3:stochastic:group=7",
    // min-max, every granularity
    "q4:minmax", "q4:minmax:row", "q4:minmax:tensor", "q4:minmax:group=7", "q2:minmax:fp32",
    "q8:minmax:stochastic:row", "q1:minmax:group=5:fp32",
    // casts, sign, sparsifiers alone and with value codecs
    "fp16", "bf16", "sign", "sign:tensor", "topk:0.5", "topk:0.1", "topk:0.5:tensor", "randk:0.5",
    "randk:0.1", "randk:0.3:unbiased", "topk:0.5+q8", "topk:0.2+q4:stochastic",
    "topk:0.3+q2:minmax:tensor", "topk:0.5:tensor+q4:group=3:fp32", "randk:0.3+q4",
    "randk:0.5+fp16", "topk:0.4+bf16"};

std::vector<float> ramp(int64_t n) {
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[i] = std::sin(0.7F * static_cast<float>(i)) * 3.0F;
  return x;
}

std::vector<float> specials() {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  return {nan, std::copysign(nan, -1.0F), inf, -inf};
}

}  // namespace

TEST_CASE("Non-finite: every codec but none refuses NaN and inf at any position") {
  // [6, 40]: channel mode covers the AVX-512 column blocks (4 rows) and tails.
  const sc::Shape shape = {6, 40};
  const int64_t n = 240;
  for (const std::string& spec : kRefusing) {
    auto codec = sc::make_codec(spec, 11);
    for (float bad : specials())
      for (int64_t pos = 0; pos < n; ++pos) {
        std::vector<float> x = ramp(n);
        x[pos] = bad;
        sc::Message msg;
        INFO(spec << " value " << bad << " at " << pos);
        try {
          codec->encode_raw(x.data(), shape, msg);
          FAIL("accepted a non-finite input");
        } catch (const slowpipe::DataError& e) {
          const std::string what = e.what();
          CHECK(what.find("'" + codec->spec() + "'") != std::string::npos);
          CHECK(what.find("non-finite") != std::string::npos);
          CHECK(what.find("index " + std::to_string(pos)) != std::string::npos);
        }
      }
    // The same codec still works on finite data afterwards.
    std::vector<float> x = ramp(n);
    sc::Message msg;
    codec->encode_raw(x.data(), shape, msg);
  }
}

TEST_CASE("Non-finite: the cases of the issue") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  at::Tensor one_nan = at::full({1}, nan);
  REQUIRE_THROWS_AS(sc::make_codec("q4")->encode(one_nan), slowpipe::DataError);
  at::Tensor row = at::tensor({1.0F, nan}).reshape({1, 2});
  REQUIRE_THROWS_AS(sc::make_codec("topk:0.5+q8")->encode(row), slowpipe::DataError);
  REQUIRE_THROWS_AS(sc::make_codec("q4:minmax:tensor")->encode(at::tensor({1.0F, nan})),
                    slowpipe::DataError);
}

TEST_CASE("Non-finite: none passes values through; channels refuse through their codec") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  at::Tensor x = at::tensor({1.0F, nan, -2.0F, INFINITY}).reshape({2, 2});
  auto none = sc::make_codec("none");
  at::Tensor y = none->decode(none->encode(x), {2, 2});
  REQUIRE(std::isnan(y[0][1].item<float>()));
  REQUIRE(std::isinf(y[1][1].item<float>()));
  sc::ChannelContext ctx;
  ctx.num_samples = 2;
  ctx.warmup_epochs = 0;
  at::Tensor ids = at::arange(2, at::kLong);
  for (const std::string spec : {"q4", "ef(q4)", "ef21(topk:0.5)", "aq(q2)"}) {
    INFO(spec);
    REQUIRE_THROWS_AS(sc::make_channel(parsed(spec), ctx)->transfer(x, ids, nullptr),
                      slowpipe::DataError);
  }
}

TEST_CASE("Non-finite: finite inputs near FLT_MAX decode to finite values") {
  const float big = 3.0e38F;
  std::vector<float> x = {big, -big, 1.0F, -FLT_MAX, FLT_MAX, 0.0F, 2e38F, -1.7e38F};
  const sc::Shape shape = {2, 4};
  for (const std::string spec :
       {"q4:fp32", "q1:fp32", "q8:tensor:fp32", "q2:row:fp32", "q4:minmax:fp32",
        "q1:minmax:tensor:fp32", "q3:stochastic:group=3:fp32", "q4", "q4:minmax", "sign",
        "topk:0.5+q8:fp32", "topk:0.5"}) {
    INFO(spec);
    auto codec = sc::make_codec(spec, 5);
    sc::Message msg;
    codec->encode_raw(x.data(), shape, msg);
    std::vector<float> y(8);
    codec->decode_raw(msg.data(), msg.size(), shape, y.data());
    for (float v : y) REQUIRE(std::isfinite(v));
  }
  // fp32 scales saturate at FLT_MAX / 4: values beyond clip, the sign survives.
  auto q = sc::make_codec("q8:tensor:fp32");
  sc::Message msg;
  q->encode_raw(x.data(), shape, msg);
  std::vector<float> y(8);
  q->decode_raw(msg.data(), msg.size(), shape, y.data());
  CHECK(y[0] == Approx(FLT_MAX / 4));
  CHECK(y[1] == Approx(-FLT_MAX / 4));
}

TEST_CASE("Non-finite: fp16 and bf16 refuse finite values that overflow them") {
  std::vector<float> x = {1.0F, 70000.0F, -2.0F};
  sc::Message msg;
  try {
    sc::make_codec("fp16")->encode_raw(x.data(), {3}, msg);
    FAIL("fp16 accepted 70000");
  } catch (const slowpipe::DataError& e) {
    CHECK(std::string(e.what()).find("index 1") != std::string::npos);
    CHECK(std::string(e.what()).find("fp16") != std::string::npos);
  }
  x[1] = 65504.0F;  // the largest half is fine
  sc::make_codec("fp16")->encode_raw(x.data(), {3}, msg);
  x[1] = FLT_MAX;  // rounds to inf in bf16
  REQUIRE_THROWS_AS(sc::make_codec("bf16")->encode_raw(x.data(), {3}, msg), slowpipe::DataError);
  x[1] = 3.0e38F;  // rounds to a finite bf16
  sc::make_codec("bf16")->encode_raw(x.data(), {3}, msg);
}

TEST_CASE("Non-finite: decoders refuse fp32 scales beyond FLT_MAX / 4") {
  auto q = sc::make_codec("q4:tensor:fp32");
  std::vector<float> x = {1.0F, -1.0F, 0.5F, 0.25F};
  sc::Message msg;
  q->encode_raw(x.data(), {4}, msg);
  const float huge = 3.0e38F;
  std::memcpy(msg.data(), &huge, 4);
  std::vector<float> y(4);
  REQUIRE_THROWS_AS(q->decode_raw(msg.data(), msg.size(), {4}, y.data()), slowpipe::DataError);
}

TEST_CASE("Non-finite: max-abs statistics carry NaN and inf (SIMD and portable alike)") {
  for (sc::ScaleMode mode : {sc::ScaleMode::kChannel, sc::ScaleMode::kRow, sc::ScaleMode::kGroup}) {
    sc::GroupLayout l;
    l.mode = mode;
    l.numel = 8 * 48;
    l.channels = 48;
    l.run = mode == sc::ScaleMode::kRow ? 48 : 5;
    l.groups = mode == sc::ScaleMode::kChannel ? 48 : (l.numel + l.run - 1) / l.run;
    for (float bad : specials())
      for (int64_t pos : {int64_t{0}, int64_t{17}, int64_t{200}, l.numel - 1})
        for (bool simd : {true, false}) {
          std::vector<float> x = ramp(l.numel);
          x[pos] = bad;
          std::vector<float> m(static_cast<size_t>(l.groups));
          sc::group_maxabs(x.data(), l, m.data(), simd);
          int64_t g = mode == sc::ScaleMode::kChannel ? pos % 48 : pos / l.run;
          INFO("mode " << static_cast<int>(mode) << " pos " << pos << " simd " << simd);
          REQUIRE(!std::isfinite(m[g]));
          if (std::isnan(bad)) REQUIRE(std::isnan(m[g]));
        }
  }
}

TEST_CASE("Non-finite: randk:unbiased refuses values that overflow when rescaled") {
  std::vector<float> x = {3.0e38F, -3.0e38F, 3.0e38F, 3.0e38F};
  auto codec = sc::make_codec("randk:0.5:unbiased");
  sc::Message msg;
  codec->encode_raw(x.data(), {4}, msg);
  std::vector<float> y(4);
  REQUIRE_THROWS_AS(codec->decode_raw(msg.data(), msg.size(), {4}, y.data()), slowpipe::DataError);
}
