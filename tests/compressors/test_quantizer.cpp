// Quantizer codecs against the naive reference (byte for byte), fp16 scale
// rounding, stochastic rounding's unbiasedness, and the cast/sign codecs.
#include <ATen/ATen.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>

#include "compressors/codecs/codec.h"
#include "compressors/codecs/quantizer.h"
#include "naive_reference.h"

namespace sc = slowpipe::compressors;

namespace {
std::vector<float> random_values(int64_t n, uint32_t seed, bool laplace = false) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0F, 1.0F);
  std::exponential_distribution<float> expo(1.0F);
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = laplace ? (rng() & 1 ? 1.0F : -1.0F) * expo(rng) : normal(rng);
    if (i % 7 == 3) x[i] *= 10.0F;  // uneven channels
  }
  return x;
}
std::string mode_arg(sc::ScaleMode m, int64_t g) {
  switch (m) {
    case sc::ScaleMode::kTensor:
      return ":tensor";
    case sc::ScaleMode::kRow:
      return ":row";
    case sc::ScaleMode::kChannel:
      return ":channel";
    case sc::ScaleMode::kGroup:
      return ":group=" + std::to_string(g);
  }
  return "";
}
}  // namespace

TEST_CASE("Quantizer: payload equals the naive reference byte for byte") {
  const std::vector<std::vector<int64_t>> shapes = {
      {7}, {3, 5}, {4, 33}, {2, 3, 17}, {5, 8, 64}, {1, 3 * 4096 + 37}, {3, 4100}};
  const std::vector<std::pair<sc::ScaleMode, int64_t>> modes = {{sc::ScaleMode::kTensor, 0},
                                                                {sc::ScaleMode::kRow, 0},
                                                                {sc::ScaleMode::kChannel, 0},
                                                                {sc::ScaleMode::kGroup, 5},
                                                                {sc::ScaleMode::kGroup, 64}};
  uint32_t seed = 1;
  for (const auto& shape : shapes) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    const uint32_t s = seed++;
    std::vector<float> x = random_values(n, s, s % 2 == 0);
    for (int bits = 1; bits <= 8; ++bits)
      for (auto [mode, g] : modes)
        for (bool minmax : {false, true})
          for (bool fp32 : {false, true}) {
            std::string spec = "q" + std::to_string(bits) + mode_arg(mode, g) +
                               (minmax ? ":minmax" : "") + (fp32 ? ":fp32" : "");
            INFO("spec " << spec << " shape size " << n);
            sc::QuantizerConfig c;
            c.bits = bits;
            c.mode = mode;
            c.group = g;
            c.minmax = minmax;
            c.fp32_scales = fp32;
            auto codec = sc::make_codec(spec);
            sc::Message msg;
            codec->encode_raw(x.data(), shape, msg);
            std::vector<uint8_t> ref = sc::naive::quantize_payload(x, shape, c);
            REQUIRE(msg.size() == ref.size());
            REQUIRE(msg == ref);
            std::vector<float> y(n);
            codec->decode_raw(msg.data(), msg.size(), shape, y.data());
            std::vector<float> yref = sc::naive::dequantize_payload(ref, shape, c);
            for (int64_t i = 0; i < n; ++i) REQUIRE(y[i] == yref[i]);
          }
  }
}

TEST_CASE("Quantizer: round to nearest stays within half a step, never clips") {
  std::vector<int64_t> shape = {4, 16, 96};
  std::vector<float> x = random_values(4 * 16 * 96, 42);
  for (int bits : {2, 3, 4, 8}) {
    auto codec = sc::make_codec("q" + std::to_string(bits));  // max-abs, fp16 scale per channel
    sc::Message msg;
    codec->encode_raw(x.data(), shape, msg);
    std::vector<float> y(x.size());
    codec->decode_raw(msg.data(), msg.size(), shape, y.data());
    for (int64_t c = 0; c < 96; ++c) {
      float maxabs = 0;
      for (int64_t r = 0; r < 64; ++r) maxabs = std::max(maxabs, std::fabs(x[r * 96 + c]));
      float step = 2.0F * maxabs / static_cast<float>((1 << bits) - 2);
      for (int64_t r = 0; r < 64; ++r)
        REQUIRE(std::fabs(y[r * 96 + c] - x[r * 96 + c]) <= 0.5F * step * 1.002F + 1e-6F);
    }
  }
}

TEST_CASE("Quantizer: fp16 scales are rounded outward to the nearest half") {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-70000.0F, 70000.0F);
  for (int i = 0; i < 20000; ++i) {
    float v = i < 10 ? std::ldexp(1.0F, -20 + i) : u(rng) * std::pow(10.0F, -(i % 9));
    uint16_t up = sc::half_round_up(v);
    uint16_t down = sc::half_round_down(v);
    if (std::fabs(v) <= 65504.0F) {
      REQUIRE(sc::half_to_float(up) >= v);
      REQUIRE(sc::half_to_float(down) <= v);
      // Tight: the half one below `up` (toward -inf) is below v.
      uint16_t below = (up & 0x8000) ? up + 1 : (up == 0 ? 0x8001 : up - 1);
      REQUIRE(sc::half_to_float(below) < v);
    } else {
      REQUIRE(std::isfinite(sc::half_to_float(up)));
    }
  }
}

TEST_CASE("Quantizer: stochastic rounding is unbiased") {
  // Mean error over N draws has standard deviation <= step / (2 sqrt(N)).
  const int64_t n = 512;
  const int draws = 2000;
  std::vector<int64_t> shape = {n};
  std::vector<float> x = random_values(n, 9);
  for (const char* spec :
       {"q2:stochastic:tensor", "q4:stochastic:tensor:minmax", "q1:stochastic:tensor"}) {
    INFO(spec);
    auto codec = sc::make_codec(spec, 77);
    auto nearest = sc::make_codec(std::string(spec).replace(3, 11, ""), 77);
    std::vector<double> sum(n, 0.0);
    std::vector<float> y(n);
    sc::Message msg;
    for (int d = 0; d < draws; ++d) {
      codec->encode_raw(x.data(), shape, msg);
      codec->decode_raw(msg.data(), msg.size(), shape, y.data());
      for (int64_t i = 0; i < n; ++i) sum[i] += y[i];
    }
    float maxabs = 0, lo = x[0], hi = x[0];
    for (float v : x) {
      maxabs = std::max(maxabs, std::fabs(v));
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    const bool minmax = std::string(spec).find("minmax") != std::string::npos;
    const int bits = spec[1] - '0';
    const int levels = minmax ? (1 << bits) : (bits == 1 ? 2 : (1 << bits) - 1);
    const double step = (minmax ? (hi - lo) : 2.0 * maxabs) / (levels - 1);
    const double sd = step / (2.0 * std::sqrt(static_cast<double>(draws)));
    double total = 0;
    int beyond = 0;
    for (int64_t i = 0; i < n; ++i) {
      double err = sum[i] / draws - x[i];
      total += err;
      REQUIRE(std::fabs(err) < 6.0 * sd);
      beyond += std::fabs(err) > 3.0 * sd;
    }
    REQUIRE(beyond <= 5);  // P(|z| > 3) = 0.27%: about 1.4 of 512 expected
    REQUIRE(std::fabs(total / n) < 6.0 * sd / std::sqrt(static_cast<double>(n)));
    // The same data rounded to nearest is biased far beyond that bound somewhere.
    nearest->encode_raw(x.data(), shape, msg);
    nearest->decode_raw(msg.data(), msg.size(), shape, y.data());
    double worst = 0;
    for (int64_t i = 0; i < n; ++i)
      worst = std::max(worst, std::fabs(static_cast<double>(y[i]) - x[i]));
    REQUIRE(worst > 6.0 * sd);
  }
}

TEST_CASE("Quantizer: stochastic rounding picks a neighbouring level") {
  std::vector<int64_t> shape = {6, 4097};
  std::vector<float> x = random_values(6 * 4097, 5);
  auto codec = sc::make_codec("q3:stochastic:row", 1);
  sc::Message msg;
  codec->encode_raw(x.data(), shape, msg);
  std::vector<float> y(x.size());
  codec->decode_raw(msg.data(), msg.size(), shape, y.data());
  for (int64_t r = 0; r < 6; ++r) {
    float maxabs = 0;
    for (int64_t j = 0; j < 4097; ++j) maxabs = std::max(maxabs, std::fabs(x[r * 4097 + j]));
    float step = 2.0F * maxabs / 6.0F;
    for (int64_t j = 0; j < 4097; ++j)
      REQUIRE(std::fabs(y[r * 4097 + j] - x[r * 4097 + j]) <= step * 1.002F);
  }
}

TEST_CASE(
    "Cast codecs: none is exact, fp16/bf16 match libtorch's casts, sign keeps sign and l1 mass") {
  at::manual_seed(0);
  at::Tensor x = at::randn({3, 5, 7});
  sc::Shape shape = {3, 5, 7};
  auto none = sc::make_codec("none");
  sc::Message msg = none->encode(x);
  REQUIRE(msg.size() == 4 * 105);
  REQUIRE(at::equal(none->decode(msg, shape), x));
  auto fp16 = sc::make_codec("fp16");
  msg = fp16->encode(x);
  REQUIRE(msg.size() == 2 * 105);
  REQUIRE(at::equal(fp16->decode(msg, shape), x.to(at::kHalf).to(at::kFloat)));
  auto bf16 = sc::make_codec("bf16");
  msg = bf16->encode(x);
  REQUIRE(at::equal(bf16->decode(msg, shape), x.to(at::kBFloat16).to(at::kFloat)));
  auto sign = sc::make_codec("sign");
  msg = sign->encode(x);
  REQUIRE(msg.size() == 3 * 4 + (105 + 7) / 8);
  at::Tensor y = sign->decode(msg, shape);
  for (int64_t r = 0; r < 3; ++r) {
    at::Tensor xr = x[r], yr = y[r];
    REQUIRE(at::equal(yr >= 0, xr >= 0));
    REQUIRE(std::fabs(yr.abs().sum().item<float>() - xr.abs().sum().item<float>()) < 1e-3F);
  }
}

TEST_CASE(
    "Sign codec: payload equals the naive reference (fp32 mean |x| per row, LSB-first bits)") {
  for (const sc::Shape& shape : std::vector<sc::Shape>{{1, 1}, {3, 5}, {4, 3, 11}, {2, 4099}}) {
    int64_t n = sc::shape_numel(shape), rows = shape[0], m = n / rows;
    std::vector<float> x = random_values(n, static_cast<uint32_t>(n));
    x[0] = 0.0F;  // zero counts as non-negative
    for (bool per_row : {true, false}) {
      auto codec = sc::make_codec(per_row ? "sign" : "sign:tensor");
      sc::Message msg;
      codec->encode_raw(x.data(), shape, msg);
      const int64_t groups = per_row ? rows : 1, run = per_row ? m : n;
      std::vector<uint8_t> ref(4 * groups + (n + 7) / 8, 0);
      for (int64_t g = 0; g < groups; ++g) {
        double sum = 0;
        for (int64_t i = g * run; i < (g + 1) * run; ++i) sum += std::fabs(x[i]);
        auto scale = static_cast<float>(sum / static_cast<double>(run));
        std::memcpy(&ref[4 * g], &scale, 4);
      }
      for (int64_t i = 0; i < n; ++i)
        sc::naive::put_bits(ref, 8 * 4 * groups + i, x[i] >= 0 ? 1 : 0, 1);
      REQUIRE(msg == ref);
    }
  }
}

TEST_CASE(
    "Codecs accept any layout and dtype: a strided double tensor encodes like its fp32 copy") {
  at::Tensor x = at::randn({16, 24}, at::kDouble).t();  // [24, 16], not contiguous
  REQUIRE_FALSE(x.is_contiguous());
  for (const char* spec : {"q4", "topk:0.2+q8", "fp16", "sign"}) {
    auto a = sc::make_codec(spec), b = sc::make_codec(spec);
    REQUIRE(a->encode(x) == b->encode(x.to(at::kFloat).contiguous()));
  }
}
